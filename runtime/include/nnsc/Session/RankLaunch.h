//===- RankLaunch.h - The ranks of a tensor-parallel front door -*- C++ -*-===//
//
// --tensor-parallel-size N (nns-run, nns-serve) starts N ranks of one run: with RANK set
// (torchrun's variables, RANK/WORLD_SIZE/MASTER_ADDR/MASTER_PORT, one process per rank on any
// hosts) this process joins as that rank; otherwise it spawns ranks 1..N-1 as copies of itself
// on this host (stdout discarded, stderr kept) and is rank 0. Every rank is given the same
// arguments. The spawned ranks are stopped when this process exits, a failed run included.
//
//===----------------------------------------------------------------------===//

#ifndef NNSC_SESSION_RANKLAUNCH_H
#define NNSC_SESSION_RANKLAUNCH_H

#include "nnsc/Runtime/Distributed/TensorParallelGroup.h"

#include <optional>
#include <string>

namespace nnsc::session {

/// This process's rank of `size` (nothing for one rank and no RANK), spawning the other ranks
/// as `argv` when none were launched. Throws InvalidInput for malformed variables, a size
/// that disagrees with WORLD_SIZE, or a rank that cannot be started.
std::optional<DistributedOptions> startTensorParallel(int size, char **argv);

/// The intra-op threads of a door whose --threads was not given: 2, or under tensor
/// parallelism the host's cores split over the ranks.
int defaultThreads(const std::optional<DistributedOptions> &ranks);

/// Waits for the ranks this process spawned; false if one of them failed.
bool waitForSpawnedRanks();

/// The spawned ranks that have exited, as "rank R exited with status S" or "rank R was killed
/// by signal S", joined by "; " (empty when all run, or none was spawned here).
std::string exitedSpawnedRanks();

/// Stops the ranks this process spawned (SIGTERM) and waits for them.
void stopSpawnedRanks();

/// Writes "TOOL: error: rank R: MESSAGE" ("rank R: " only for rank >= 0) to stderr in one
/// write(2), since the ranks share it and a pipe keeps writes of up to PIPE_BUF bytes whole,
/// and exits with status 1 (the spawned ranks stop at exit).
[[noreturn]] void exitWithError(const char *tool, int rank, const std::string &message);

} // namespace nnsc::session

#endif // NNSC_SESSION_RANKLAUNCH_H
