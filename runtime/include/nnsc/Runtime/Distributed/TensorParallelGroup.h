//===- TensorParallelGroup.h - the ranks one model is split over -*- C++ -*-===//
//
// The collectives of tensor parallelism on a c10d process group: a TCPStore for rendezvous
// and ProcessGroupGloo for CPU tensors or ProcessGroupNCCL for CUDA ones (created by the CUDA
// backend library, connectNcclGroup), as torch.distributed sets them up. Every rank calls
// the same collectives in the same order (the forward pass is the same on every rank), so a
// group needs no tags. A collective that cannot complete (a rank exited, the timeout passed)
// throws DistributedError naming the operation and the rank; nothing hangs past the timeout.
//
// The c10d types stay in the source: this header includes only LibTorch's tensor API.
//
//===----------------------------------------------------------------------===//

#ifndef NNSC_RUNTIME_DISTRIBUTED_TENSORPARALLELGROUP_H
#define NNSC_RUNTIME_DISTRIBUTED_TENSORPARALLELGROUP_H

#include "nnsc/Runtime/Support/Error.h"

#include <torch/torch.h>

#include <chrono>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace nnsc {

/// A distributed run that cannot go on: rendezvous failed (address in use, a rank never
/// came) or a collective failed (a rank died, the timeout passed).
class DistributedError : public Error {
public:
  using Error::Error;
};

/// Where the ranks meet: torch.distributed's env:// rendezvous.
struct DistributedOptions {
  int rank = 0;
  int worldSize = 1;
  /// This rank's index on its host (LOCAL_RANK; the rank by default): its CUDA device.
  int localRank = 0;
  std::string masterAddr = "127.0.0.1";
  int masterPort = 29500;
  /// How long a collective (and the rendezvous) may wait for the other ranks.
  std::chrono::milliseconds timeout{60000};

  /// From RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT (and NNSC_DIST_TIMEOUT, in seconds);
  /// nothing when RANK is not set. Throws DistributedError for a malformed value.
  static std::optional<DistributedOptions> fromEnvironment();
};

/// Time and bytes spent in collectives so far.
struct CommStats {
  int64_t collectives = 0;
  int64_t bytes = 0;
  double seconds = 0;
};

/// The NCCL group of `options` on CUDA device `device`: defined in the CUDA backend library
/// (NcclGroup.cpp), the one that links LibTorch's CUDA libraries. Throws DistributedError.
std::shared_ptr<class TensorParallelGroup> connectNcclGroup(const DistributedOptions &options,
                                                            torch::Device device);

/// The ranks of one tensor-parallel model.
class TensorParallelGroup {
public:
  /// Joins the group `options` describes with Gloo (rank 0 hosts the store). Throws
  /// DistributedError.
  static std::shared_ptr<TensorParallelGroup> connect(const DistributedOptions &options);
  struct Impl;
  /// A group over `impl`'s backend (TensorParallelGroupImpl.h).
  static std::shared_ptr<TensorParallelGroup> adopt(std::unique_ptr<Impl> impl, int rank, int size);
  ~TensorParallelGroup();

  int rank() const { return rankIndex; }
  int size() const { return worldSize; }

  /// Sums `value` over the ranks, in place (every rank gets the same bytes).
  void allReduce(torch::Tensor &value);
  /// Every rank's `value` (same shape and dtype on each), in rank order.
  std::vector<torch::Tensor> allGather(const torch::Tensor &value);
  /// On `root` every rank's `value` in rank order; on the others nothing.
  std::vector<torch::Tensor> gather(const torch::Tensor &value, int root = 0);
  /// Overwrites `value` with `root`'s on every rank.
  void broadcast(torch::Tensor &value, int root = 0);

  const CommStats &stats() const { return commStats; }
  /// Where the collectives run (the CPU for Gloo, a CUDA device for NCCL); tensors elsewhere
  /// are copied there and back.
  torch::Device device() const;

private:
  TensorParallelGroup(std::unique_ptr<Impl> impl, int rank, int size);

  std::unique_ptr<Impl> impl;
  int rankIndex;
  int worldSize;
  CommStats commStats;
};

} // namespace nnsc

#endif // NNSC_RUNTIME_DISTRIBUTED_TENSORPARALLELGROUP_H
