//===- TensorParallelGroup.cpp - the ranks one model is split over -*- C++ -*-===//

#include "TensorParallelGroupImpl.h"

#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include <cstdlib>

namespace nnsc {

namespace {

int envInt(const char *name, int fallback) {
  const char *text = std::getenv(name);
  if (!text || !*text)
    return fallback;
  char *end = nullptr;
  long value = std::strtol(text, &end, 10);
  if (*end || value < 0 || value > 1 << 30)
    throw DistributedError(std::string(name) + "='" + text + "' is not a non-negative integer");
  return int(value);
}

/// Runs collective `what` and waits for it, charging its time and bytes to `stats`.
template <typename F>
void collective(CommStats &stats, int rank, const char *what, int64_t bytes, F &&start) {
  auto begin = std::chrono::steady_clock::now();
  try {
    start()->wait();
  } catch (const std::exception &e) {
    throw DistributedError(std::string("tensor parallel rank ") + std::to_string(rank) + ": " +
                           what + " failed (another rank exited or timed out): " + e.what());
  }
  stats.collectives += 1;
  stats.bytes += bytes;
  stats.seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
}

int64_t bytesOf(const torch::Tensor &t) { return t.numel() * int64_t(t.element_size()); }

} // namespace

std::optional<DistributedOptions> DistributedOptions::fromEnvironment() {
  if (!std::getenv("RANK"))
    return std::nullopt;
  DistributedOptions o;
  o.rank = envInt("RANK", 0);
  o.worldSize = envInt("WORLD_SIZE", 1);
  o.localRank = envInt("LOCAL_RANK", o.rank);
  if (const char *addr = std::getenv("MASTER_ADDR"); addr && *addr)
    o.masterAddr = addr;
  o.masterPort = envInt("MASTER_PORT", o.masterPort);
  o.timeout = std::chrono::seconds(envInt("NNSC_DIST_TIMEOUT", 60));
  if (o.worldSize < 1 || o.rank >= o.worldSize)
    throw DistributedError("RANK=" + std::to_string(o.rank) +
                           " is not below WORLD_SIZE=" + std::to_string(o.worldSize));
  if (o.masterPort < 1 || o.masterPort > 65535)
    throw DistributedError("MASTER_PORT=" + std::to_string(o.masterPort) + " is not a TCP port");
  return o;
}

c10::intrusive_ptr<c10d::Store> connectStore(const DistributedOptions &options) {
  if (options.worldSize < 1 || options.rank < 0 || options.rank >= options.worldSize)
    throw DistributedError("rank " + std::to_string(options.rank) + " of a group of " +
                           std::to_string(options.worldSize));
  const std::string where = options.masterAddr + ":" + std::to_string(options.masterPort);
  try {
    c10d::TCPStoreOptions store;
    store.port = uint16_t(options.masterPort);
    store.isServer = options.rank == 0;
    store.numWorkers = options.worldSize;
    store.waitWorkers = true;
    store.timeout = options.timeout;
    return c10::make_intrusive<c10d::TCPStore>(options.masterAddr, store);
  } catch (const std::exception &e) {
    throw DistributedError(std::string("tensor parallel rank ") + std::to_string(options.rank) +
                           (options.rank == 0
                                ? ": cannot serve the rendezvous store on " + where +
                                      " (is the port in use? set MASTER_PORT): "
                                : ": cannot reach the rendezvous store on " + where + ": ") +
                           e.what());
  }
}

std::shared_ptr<TensorParallelGroup>
TensorParallelGroup::connect(const DistributedOptions &options) {
  auto impl = std::make_unique<Impl>();
  impl->store = connectStore(options);
  try {
    auto gloo = c10d::ProcessGroupGloo::Options::create_default(options.timeout);
    impl->backend = c10::make_intrusive<c10d::ProcessGroupGloo>(impl->store, options.rank,
                                                                options.worldSize, gloo);
  } catch (const std::exception &e) {
    throw DistributedError("tensor parallel rank " + std::to_string(options.rank) +
                           ": cannot connect the Gloo process group through " + options.masterAddr +
                           ":" + std::to_string(options.masterPort) + ": " + e.what());
  }
  return adopt(std::move(impl), options.rank, options.worldSize);
}

std::shared_ptr<TensorParallelGroup> TensorParallelGroup::adopt(std::unique_ptr<Impl> impl,
                                                                int rank, int size) {
  return std::shared_ptr<TensorParallelGroup>(new TensorParallelGroup(std::move(impl), rank, size));
}

torch::Device TensorParallelGroup::device() const { return impl->device; }

TensorParallelGroup::TensorParallelGroup(std::unique_ptr<Impl> impl, int rank, int size)
    : impl(std::move(impl)), rankIndex(rank), worldSize(size) {}

TensorParallelGroup::~TensorParallelGroup() = default;

namespace {
/// `value` contiguous on `device`: itself when it already is.
torch::Tensor on(const torch::Tensor &value, torch::Device device) {
  return value.to(device).contiguous();
}
} // namespace

void TensorParallelGroup::allReduce(torch::Tensor &value) {
  if (worldSize == 1)
    return;
  std::vector<at::Tensor> tensors{on(value, impl->device)};
  collective(commStats, rankIndex, "all_reduce", bytesOf(value),
             [&] { return impl->backend->allreduce(tensors); });
  if (!tensors[0].is_same(value))
    value.copy_(tensors[0]);
}

std::vector<torch::Tensor> TensorParallelGroup::allGather(const torch::Tensor &value) {
  if (worldSize == 1)
    return {value};
  std::vector<at::Tensor> input{on(value, impl->device)};
  std::vector<std::vector<at::Tensor>> output(1);
  for (int r = 0; r < worldSize; ++r)
    output[0].push_back(torch::empty_like(input[0]));
  collective(commStats, rankIndex, "all_gather", bytesOf(value) * worldSize,
             [&] { return impl->backend->allgather(output, input); });
  for (torch::Tensor &part : output[0])
    part = part.to(value.device());
  return output[0];
}

std::vector<torch::Tensor> TensorParallelGroup::gather(const torch::Tensor &value, int root) {
  if (worldSize == 1)
    return {value};
  std::vector<at::Tensor> input{on(value, impl->device)};
  std::vector<std::vector<at::Tensor>> output;
  if (rankIndex == root) {
    output.emplace_back();
    for (int r = 0; r < worldSize; ++r)
      output[0].push_back(torch::empty_like(input[0]));
  }
  c10d::GatherOptions options;
  options.rootRank = root;
  collective(commStats, rankIndex, "gather", bytesOf(value),
             [&] { return impl->backend->gather(output, input, options); });
  if (rankIndex != root)
    return {};
  for (torch::Tensor &part : output[0])
    part = part.to(value.device());
  return output[0];
}

void TensorParallelGroup::broadcast(torch::Tensor &value, int root) {
  if (worldSize == 1)
    return;
  std::vector<at::Tensor> tensors{on(value, impl->device)};
  c10d::BroadcastOptions options;
  options.rootRank = root;
  collective(commStats, rankIndex, "broadcast", bytesOf(value),
             [&] { return impl->backend->broadcast(tensors, options); });
  if (!tensors[0].is_same(value))
    value.copy_(tensors[0]);
}

} // namespace nnsc
