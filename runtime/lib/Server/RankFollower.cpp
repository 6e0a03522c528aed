//===- RankFollower.cpp - the engine loop of a rank other than 0 ----------===//

#include "nnsc/Server/RankFollower.h"

#include "PreparedRequest.h"

#include <iostream>

namespace nnsc::server {

void followRankZero(LLMEngine &engine, RankLink &link,
                    const std::optional<session::BoundTrace> &edit, size_t maxSaveBytes) {
  while (true) {
    RankMessage message = link.receive();
    for (EngineOp &op : message.ops) {
      if (op.kind == EngineOp::Kind::Abort) {
        engine.abortRequest(op.sequence);
        continue;
      }
      const RequestStates states = newRequestStates(op.request, edit, maxSaveBytes);
      try {
        admitRequest(std::move(op.request), edit, states)(engine);
      } catch (const std::exception &) {
        // Rank 0 refused it the same way and told its client.
      }
    }
    if (message.stop)
      return;
    if (message.step) {
      try {
        engine.step();
      } catch (const DistributedError &) {
        throw;
      } catch (const std::exception &e) {
        // Rank 0's step failed alike: its aborts of the requests in flight come next.
        std::cerr << "rank " << link.rank() << ": engine step failed: " << e.what() << "\n";
      }
    }
    engine.takeFinished();
  }
}

} // namespace nnsc::server
