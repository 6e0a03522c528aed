//===- Scheduler.cpp - Continuous batching with chunked prefill -*- C++ -*-===//

#include "nnsc/Runtime/Engine/Scheduler.h"

#include "nnsc/Runtime/Support/Error.h"

#include <algorithm>
#include <cassert>
#include <stdexcept>
#include <string>

namespace nnsc {

namespace {

[[noreturn]] void rejectConfig(const std::string &what) {
  throw InvalidInput("scheduler config: " + what);
}

SchedulerConfig checked(const SchedulerConfig &cfg) {
  if (cfg.maxNumSeqs < 1)
    rejectConfig("'max_num_seqs' must be >= 1, got " + std::to_string(cfg.maxNumSeqs));
  // A decode step schedules one token per running sequence within the same budget.
  if (cfg.maxNumBatchedTokens < cfg.maxNumSeqs)
    rejectConfig("'max_num_batched_tokens' (" + std::to_string(cfg.maxNumBatchedTokens) +
                 ") must be >= 'max_num_seqs' (" + std::to_string(cfg.maxNumSeqs) + ")");
  if (cfg.maxModelLen < 1)
    rejectConfig("'max_model_len' must be >= 1, got " + std::to_string(cfg.maxModelLen));
  return cfg;
}

/// Whether `seq` ended its own part only: its hooks cut it (`stop()` in its invoke; a failed
/// kernel cuts every member of its request at once) or it reached its own max_tokens. Any
/// other end (a stop token, finish(), the context length) ends its gang.
bool endsAlone(const Sequence &seq) {
  return seq.finishReason == FinishReason::Cut ||
         (seq.finishReason == FinishReason::Length &&
          seq.numCompletionTokens() >= seq.samplingParams().maxTokens);
}

/// Whether another member of `seq`'s gang runs on after this step.
bool gangRunsOn(const Sequence &seq) {
  return std::any_of(seq.gang.begin(), seq.gang.end(), [&](const Sequence *member) {
    return member != &seq && member->status == SequenceStatus::Running &&
           member->finishReason == FinishReason::None;
  });
}

} // namespace

int64_t ScheduledBatch::numTokens() const {
  int64_t total = 0;
  for (const Sequence *seq : seqs)
    total += seq->numScheduledTokens;
  return total;
}

std::vector<Sequence *> ScheduledBatch::samplingSeqs() const {
  std::vector<Sequence *> out;
  for (Sequence *seq : seqs)
    if (seq->samplesThisStep())
      out.push_back(seq);
  return out;
}

Scheduler::Scheduler(const SchedulerConfig &config)
    : cfg(checked(config)), blocks(cfg.numBlocks, cfg.blockSize, cfg.enablePrefixCaching) {
  // Otherwise a single long sequence could wait forever for blocks that do not exist.
  int64_t needed = (cfg.maxModelLen + cfg.blockSize - 1) / cfg.blockSize;
  if (needed > cfg.numBlocks)
    rejectConfig("a KV cache of " + std::to_string(cfg.numBlocks) + " blocks of " +
                 std::to_string(cfg.blockSize) + " tokens cannot hold one sequence of " +
                 "'max_model_len' " + std::to_string(cfg.maxModelLen) + " tokens (needs " +
                 std::to_string(needed) + " blocks)");
}

void Scheduler::add(Sequence *seq) {
  check(seq);
  active.insert(seq);
  waiting.push_back(seq);
}

void Scheduler::check(const Sequence *seq) const {
  seq->samplingParams().validate();
  if (seq->numTokens() > cfg.maxModelLen)
    throw InvalidInput("sequence " + std::to_string(seq->id()) + ": prompt of " +
                       std::to_string(seq->numTokens()) +
                       " tokens is longer than the context ('max_model_len' " +
                       std::to_string(cfg.maxModelLen) + ")");
  if (active.count(seq) || seq->status != SequenceStatus::Waiting)
    throw InvalidInput("sequence " + std::to_string(seq->id()) + " was already added");
}

void Scheduler::addGang(const std::vector<Sequence *> &seqs) {
  if (seqs.empty())
    throw InvalidInput("a multi-invoke request needs at least one sequence");
  int64_t tokens = 0;
  for (Sequence *seq : seqs)
    tokens += seq->numTokens();
  const std::string what = "a request of " + std::to_string(seqs.size()) + " invokes";
  if (static_cast<int64_t>(seqs.size()) > cfg.maxNumSeqs)
    throw InvalidInput(what + " needs 'max_num_seqs' >= " + std::to_string(seqs.size()) +
                       " (it is " + std::to_string(cfg.maxNumSeqs) + ")");
  // Its prompts run in one forward pass, so they must fit one step's token budget.
  if (tokens > cfg.maxNumBatchedTokens)
    throw InvalidInput(what + " has " + std::to_string(tokens) +
                       " prompt tokens, more than 'max_num_batched_tokens' (" +
                       std::to_string(cfg.maxNumBatchedTokens) + ")");
  for (const Sequence *seq : seqs)
    check(seq);
  for (Sequence *seq : seqs) {
    seq->gang = seqs;
    active.insert(seq);
    waiting.push_back(seq);
  }
}

ScheduledBatch Scheduler::schedule() {
  ScheduledBatch batch = schedulePrefill();
  if (!batch.empty())
    return batch;
  batch = scheduleDecode();
  if (!batch.empty())
    return batch;
  // The decode step preempted every running sequence; now they can be admitted again.
  ScheduledBatch prefill = schedulePrefill();
  prefill.restarted = std::move(batch.restarted);
  return prefill;
}

ScheduledBatch Scheduler::schedulePrefill() {
  ScheduledBatch batch;
  batch.isPrefill = true;
  int64_t budget = cfg.maxNumBatchedTokens;
  // Prompts chunked in earlier steps continue first. One remaining token is a decode step.
  for (Sequence *seq : running) {
    if (budget <= 0)
      break;
    if (seq->numUncomputedTokens() <= 1)
      continue;
    seq->numScheduledTokens = std::min(seq->numUncomputedTokens(), budget);
    budget -= seq->numScheduledTokens;
    batch.seqs.push_back(seq);
  }
  while (!waiting.empty() && budget > 0 && static_cast<int64_t>(running.size()) < cfg.maxNumSeqs) {
    Sequence *seq = waiting.front();
    if (!seq->gang.empty()) {
      if (!admitGang(unitOf(*seq), budget, batch))
        break;
      continue;
    }
    if (!blocks.canAllocate(*seq))
      break;
    // A prompt that must not be chunked waits for room, unless the step is empty.
    if (seq->prefillWhole && seq->numUncomputedTokens() > budget && !batch.seqs.empty())
      break;
    blocks.allocate(*seq);
    seq->numScheduledTokens = seq->prefillWhole ? seq->numUncomputedTokens()
                                                : std::min(seq->numUncomputedTokens(), budget);
    budget -= seq->numScheduledTokens;
    seq->status = SequenceStatus::Running;
    waiting.pop_front();
    running.push_back(seq);
    batch.seqs.push_back(seq);
  }
  return batch;
}

bool Scheduler::admitGang(const std::vector<Sequence *> &gang, int64_t &budget,
                          ScheduledBatch &batch) {
  if (static_cast<int64_t>(running.size() + gang.size()) > cfg.maxNumSeqs)
    return false;
  size_t allocated = 0;
  int64_t tokens = 0;
  for (; allocated < gang.size() && blocks.canAllocate(*gang[allocated]); ++allocated) {
    blocks.allocate(*gang[allocated]);
    tokens += gang[allocated]->numUncomputedTokens();
  }
  if (allocated < gang.size() || tokens > budget) {
    for (size_t i = 0; i < allocated; ++i)
      blocks.deallocate(*gang[i]);
    return false;
  }
  for (Sequence *seq : gang) {
    assert(waiting.front() == seq && "a gang waits as one block of the queue");
    seq->numScheduledTokens = seq->numUncomputedTokens();
    seq->status = SequenceStatus::Running;
    waiting.pop_front();
    running.push_back(seq);
    batch.seqs.push_back(seq);
  }
  budget -= tokens;
  return true;
}

ScheduledBatch Scheduler::scheduleDecode() {
  ScheduledBatch batch;
  // A unit is a sequence of its own or the running members of a gang, which sit together in
  // `running`.
  auto takeUnit = [this](bool fromBack) {
    std::vector<Sequence *> unit = unitOf(fromBack ? *running.back() : *running.front());
    for (size_t i = 0; i < unit.size(); ++i)
      fromBack ? running.pop_back() : running.pop_front();
    return unit;
  };
  auto preemptUnit = [this, &batch](const std::vector<Sequence *> &unit) {
    const std::vector<Sequence *> &members = unit.front()->gang.empty() ? unit : unit.front()->gang;
    // Reverse order keeps the gang in invoke order at the front of the waiting queue. A parked
    // member that restarts goes back with the others: the gang's state is rebuilt from every
    // prompt, its too (values it computed before it stopped are used by later invokes).
    for (auto it = members.rbegin(); it != members.rend(); ++it) {
      if ((*it)->status == SequenceStatus::Running)
        preempt(*it, batch);
      else if ((*it)->status == SequenceStatus::Parked && (*it)->restartOnPreemption)
        unpark(*it, batch);
    }
  };
  auto missingBlocks = [this](const std::vector<Sequence *> &unit) {
    int64_t missing = 0;
    for (const Sequence *seq : unit)
      missing += seq->numBlocks(cfg.blockSize) - static_cast<int64_t>(seq->blockTable.size());
    return missing;
  };
  while (!running.empty()) {
    std::vector<Sequence *> unit = takeUnit(false);
    bool fits = true;
    while (missingBlocks(unit) > blocks.numFreeBlocks()) {
      if (running.empty()) {
        preemptUnit(unit);
        fits = false;
        break;
      }
      preemptUnit(takeUnit(true));
    }
    if (!fits)
      continue;
    for (Sequence *seq : unit) {
      blocks.mayAppend(*seq);
      seq->numScheduledTokens = 1;
      batch.seqs.push_back(seq);
    }
  }
  running.insert(running.begin(), batch.seqs.begin(), batch.seqs.end());
  return batch;
}

void Scheduler::preempt(Sequence *seq, ScheduledBatch &batch) {
  seq->status = SequenceStatus::Waiting;
  seq->numScheduledTokens = 0;
  blocks.deallocate(*seq);
  if (seq->restartOnPreemption) {
    seq->restartFromPrompt();
    batch.restarted.push_back(seq);
  }
  waiting.push_front(seq);
  ++preemptions;
}

void Scheduler::unpark(Sequence *seq, ScheduledBatch &batch) {
  seq->status = SequenceStatus::Waiting;
  seq->restartFromPrompt();
  batch.restarted.push_back(seq);
  waiting.push_front(seq);
}

std::vector<Sequence *> Scheduler::unitOf(Sequence &seq) {
  if (seq.gang.empty())
    return {&seq};
  std::vector<Sequence *> unit;
  for (Sequence *member : seq.gang)
    if (member->status != SequenceStatus::Parked && member->status != SequenceStatus::Finished)
      unit.push_back(member);
  return unit;
}

bool Scheduler::isStopToken(const Sequence &seq, int32_t token) const {
  const SamplingParams &params = seq.samplingParams();
  auto contains = [token](const std::vector<int32_t> &ids) {
    return std::find(ids.begin(), ids.end(), token) != ids.end();
  };
  return (!params.ignoreEos && contains(cfg.eosTokenIds)) || contains(params.stopTokenIds);
}

std::vector<Sequence *> Scheduler::postprocess(const ScheduledBatch &batch,
                                               std::span<const int32_t> sampled) {
  size_t expected = batch.samplingSeqs().size();
  if (sampled.size() != expected)
    throw InvalidInput("scheduler: postprocess got " + std::to_string(sampled.size()) +
                       " sampled tokens for " + std::to_string(expected) +
                       " sequences that sample this step");
  for (int32_t token : sampled)
    if (token < 0)
      throw InvalidInput("scheduler: postprocess got negative token id " + std::to_string(token));

  std::vector<Sequence *> ending;
  size_t next = 0;
  for (Sequence *seq : batch.seqs) {
    bool samples = seq->samplesThisStep();
    seq->numCachedTokens += seq->numScheduledTokens;
    seq->numScheduledTokens = 0;
    // A pass cut short (stop(), a failed kernel) left the later interventions out of its K/V.
    if (seq->endAfterStep != FinishReason::Cut)
      blocks.cacheComputedBlocks(*seq);
    if (samples) {
      int32_t token = sampled[next++];
      // max_tokens 0 asks for the prompt pass alone: its sampled token is dropped.
      bool keeps = seq->endAfterStep != FinishReason::Cut && seq->samplingParams().maxTokens > 0;
      if (keeps)
        seq->appendToken(token);
      if (seq->endAfterStep != FinishReason::None)
        seq->finishReason = seq->endAfterStep;
      else if (keeps && isStopToken(*seq, token))
        seq->finishReason = FinishReason::Stop;
      else if (!keeps || seq->numCompletionTokens() >= seq->samplingParams().maxTokens ||
               seq->numTokens() >= cfg.maxModelLen)
        seq->finishReason = FinishReason::Length;
    } else {
      // A chunk of the prompt: only a hook can end the request here.
      seq->finishReason = seq->endAfterStep;
    }
    if (seq->finishReason != FinishReason::None)
      ending.push_back(seq);
  }
  std::vector<Sequence *> finished;
  for (Sequence *seq : ending) {
    if (seq->isFinished())
      continue; // it ended with its gang, earlier in this loop
    if (endsAlone(*seq) && gangRunsOn(*seq)) {
      seq->status = SequenceStatus::Parked;
      blocks.deallocate(*seq);
      running.erase(std::find(running.begin(), running.end(), seq));
      continue;
    }
    end(seq, finished);
    // The rest of its gang ends with it: those ending this step or parked keep their reason.
    for (Sequence *member : seq->gang) {
      if (member->isFinished())
        continue;
      if (member->finishReason == FinishReason::None)
        member->finishReason = seq->finishReason;
      end(member, finished);
    }
  }
  return finished;
}

void Scheduler::end(Sequence *seq, std::vector<Sequence *> &finished) {
  seq->status = SequenceStatus::Finished;
  seq->numScheduledTokens = 0;
  blocks.deallocate(*seq);
  if (auto it = std::find(running.begin(), running.end(), seq); it != running.end())
    running.erase(it);
  active.erase(seq);
  finished.push_back(seq);
}

std::vector<Sequence *> Scheduler::abort(Sequence &seq) {
  std::vector<Sequence *> ended;
  if (seq.isFinished() || !active.count(&seq))
    return ended;
  std::vector<Sequence *> unit = seq.gang.empty() ? std::vector<Sequence *>{&seq} : seq.gang;
  for (Sequence *member : unit) {
    if (member->isFinished())
      continue;
    if (member->status == SequenceStatus::Running)
      blocks.deallocate(*member);
    for (std::deque<Sequence *> *queue : {&waiting, &running})
      if (auto it = std::find(queue->begin(), queue->end(), member); it != queue->end())
        queue->erase(it);
    member->status = SequenceStatus::Finished;
    member->finishReason = FinishReason::Abort;
    member->numScheduledTokens = 0;
    active.erase(member);
    ended.push_back(member);
  }
  return ended;
}

} // namespace nnsc
