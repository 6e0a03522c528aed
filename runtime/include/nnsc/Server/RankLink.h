//===- RankLink.h - rank 0's engine operations, sent to the other ranks -*- C++ -*-===//
//
// A tensor-parallel server (docs/Distributed.md, "Serving") runs one engine per rank, and every
// rank's engine must see the same requests and aborts in the same order before the same steps
// (the scheduler is deterministic; CausalLM checks each step's batch fingerprint). Only rank 0
// parses HTTP: its engine thread records what it does to its engine (a request admitted, a
// sequence aborted) and, before each step, broadcasts the record through the model's c10d
// group; the other ranks replay it (RankFollower.h) and step with it. A request travels as
// what the engine needs: prompt ids, sampling, and its program as the bundle's bytes (once per
// program; later requests name it), its trace and its bound params.
//
//===----------------------------------------------------------------------===//

#ifndef NNSC_SERVER_RANKLINK_H
#define NNSC_SERVER_RANKLINK_H

#include "nnsc/Runtime/Distributed/TensorParallelGroup.h"
#include "nnsc/Runtime/Engine/SamplingParams.h"
#include "nnsc/Session/ProgramRegistry.h"

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace nnsc::server {

/// A request as rank 0 admitted it (the fields of session::Submission that are not states).
struct ForwardedRequest {
  std::vector<std::vector<int32_t>> prompts;
  SamplingParams sampling;
  /// The program's trace with its params; no program for a plain request.
  session::BoundTrace bound;
};

/// One thing rank 0's engine thread did to its engine.
struct EngineOp {
  enum class Kind : uint8_t { Admit, Abort };
  Kind kind = Kind::Abort;
  ForwardedRequest request; // Admit
  int64_t sequence = -1;    // Abort: the engine's sequence id (the same on every rank)
};

/// What rank 0 sends before each step, and while idle to keep the group's collectives within
/// their timeout.
struct RankMessage {
  std::vector<EngineOp> ops;
  /// Run one engine step after the ops.
  bool step = false;
  /// The server is stopping: the other ranks exit.
  bool stop = false;
};

/// Bytes sent so far (rank 0) or received (the others), and the messages; with the group's
/// collectives of every kind (the forward pass's included) as of the last message.
struct RankLinkStats {
  int64_t messages = 0;
  int64_t bytes = 0;
  /// Of `bytes`, the bundle files sent once per program.
  int64_t programBytes = 0;
  CommStats collectives;
};

/// Rank 0's side and the other ranks' side of the record, over `group`'s broadcasts.
class RankLink {
public:
  /// `programs` loads the bundles rank 0 sends (ranks > 0).
  RankLink(TensorParallelGroup &group, session::ProgramRegistry &programs);

  int rank() const { return group.rank(); }
  /// How long rank 0 may stay silent: a third of the collectives' timeout.
  std::chrono::milliseconds heartbeat() const { return heartbeatEvery; }

  /// Rank 0: broadcasts `message`. Throws DistributedError when a rank is gone.
  void send(const RankMessage &message);
  /// Ranks > 0: the next message. Throws DistributedError when rank 0 is gone, InvalidInput
  /// for bytes that do not decode (a rank of another build).
  RankMessage receive();

  const RankLinkStats &stats() const { return counts; }

  /// The encoding alone (tested without a group): `programIds` maps the programs sent so far to
  /// their ids (rank 0), `programs` the ids to the programs loaded (the others).
  static std::string encode(const RankMessage &message,
                            std::map<const session::Program *, int64_t> &programIds,
                            std::vector<std::shared_ptr<const session::Program>> &sent,
                            int64_t &programBytes);
  static RankMessage decode(const std::string &bytes, session::ProgramRegistry &registry,
                            std::map<int64_t, std::shared_ptr<const session::Program>> &programs);

private:
  TensorParallelGroup &group;
  session::ProgramRegistry &registry;
  std::chrono::milliseconds heartbeatEvery;
  /// Rank 0: the programs sent (kept alive, so an address is never reused for another).
  std::map<const session::Program *, int64_t> programIds;
  std::vector<std::shared_ptr<const session::Program>> sent;
  /// Ranks > 0: the programs received.
  std::map<int64_t, std::shared_ptr<const session::Program>> programs;
  RankLinkStats counts;
};

} // namespace nnsc::server

#endif // NNSC_SERVER_RANKLINK_H
