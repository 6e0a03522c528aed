//===- RankFollower.h - the engine loop of a rank other than 0 --*- C++ -*-===//
//
// A tensor-parallel server's ranks other than 0 parse no HTTP: each runs its engine on what
// rank 0 sends (RankLink.h) and drops the results, which rank 0 answers with.
//
//===----------------------------------------------------------------------===//

#ifndef NNSC_SERVER_RANKFOLLOWER_H
#define NNSC_SERVER_RANKFOLLOWER_H

#include "nnsc/Runtime/Engine/LLMEngine.h"
#include "nnsc/Server/RankLink.h"

#include <optional>

namespace nnsc::server {

/// Replays rank 0's messages on `engine` until rank 0 says stop: admits each request as rank 0
/// did (its program state's saves limited to `maxSaveBytes`, bound after the server's `edit`
/// where there is one), aborts what it aborted, and steps when it stepped. Throws
/// DistributedError when rank 0 is gone and InvalidInput for a message that does not decode.
void followRankZero(LLMEngine &engine, RankLink &link,
                    const std::optional<session::BoundTrace> &edit, size_t maxSaveBytes);

} // namespace nnsc::server

#endif // NNSC_SERVER_RANKFOLLOWER_H
