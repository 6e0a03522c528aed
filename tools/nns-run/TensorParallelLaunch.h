//===- TensorParallelLaunch.h - nns-run's ranks -----------------*- C++ -*-===//
//
// --tensor-parallel-size N starts N ranks of one run: with RANK set (torchrun's variables,
// RANK/WORLD_SIZE/MASTER_ADDR/MASTER_PORT, one process per rank on any hosts) this process
// joins as that rank; otherwise it spawns ranks 1..N-1 as copies of itself on this host
// (stdout discarded, stderr kept) and is rank 0. Every rank is given the same options;
// rank 0 prints and writes the results.
//
//===----------------------------------------------------------------------===//

#ifndef NNSC_TOOLS_NNSRUN_TENSORPARALLELLAUNCH_H
#define NNSC_TOOLS_NNSRUN_TENSORPARALLELLAUNCH_H

#include "nnsc/Runtime/Distributed/TensorParallelGroup.h"

#include <optional>

namespace nnsrun {

/// This process's rank of `size` (nothing for one rank and no RANK), spawning the other ranks
/// when none were launched. Exits through fail() for malformed variables.
std::optional<nnsc::DistributedOptions> startTensorParallel(int size, char **argv);

/// Waits for the ranks this process spawned; false if one of them failed.
bool waitForSpawnedRanks();

} // namespace nnsrun

#endif // NNSC_TOOLS_NNSRUN_TENSORPARALLELLAUNCH_H
