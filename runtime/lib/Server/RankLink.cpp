//===- RankLink.cpp - rank 0's engine operations, sent to the other ranks -===//

#include "nnsc/Server/RankLink.h"

#include "nnsc/Runtime/Support/Error.h"
#include "nnsc/Runtime/Support/RuntimeOptions.h"

#include <cstring>
#include <type_traits>

namespace nnsc::server {

namespace {

// A new SamplingParams field must travel too (writeSampling, readSampling).
static_assert(sizeof(SamplingParams) == 88, "SamplingParams changed: update RankLink.cpp");

class Writer {
public:
  template <typename T> void put(T value) {
    static_assert(std::is_trivially_copyable_v<T>);
    out.append(reinterpret_cast<const char *>(&value), sizeof value);
  }
  void bytes(const void *data, size_t size) {
    put(uint64_t(size));
    out.append(static_cast<const char *>(data), size);
  }
  void text(const std::string &s) { bytes(s.data(), s.size()); }
  std::string out;
};

class Reader {
public:
  explicit Reader(const std::string &in) : in(in) {}
  template <typename T> T get() {
    T value;
    std::memcpy(&value, take(sizeof value), sizeof value);
    return value;
  }
  std::string text() {
    const uint64_t size = get<uint64_t>();
    return std::string(take(size), size);
  }
  /// A count of items of at least `itemBytes` each, checked against what is left.
  uint64_t count(size_t itemBytes) {
    const uint64_t n = get<uint64_t>();
    if (n > (in.size() - at) / std::max<size_t>(itemBytes, 1))
      truncated();
    return n;
  }
  const char *take(uint64_t size) {
    if (size > in.size() - at)
      truncated();
    const char *p = in.data() + at;
    at += size;
    return p;
  }
  bool done() const { return at == in.size(); }

private:
  [[noreturn]] static void truncated() {
    throw InvalidInput("tensor-parallel server: a message from rank 0 is truncated (are the "
                       "ranks the same build?)");
  }
  const std::string &in;
  size_t at = 0;
};

void writeSampling(Writer &w, const SamplingParams &s) {
  w.put(s.temperature);
  w.put(s.topK);
  w.put(s.topP);
  w.put(uint8_t(s.seed.has_value()));
  w.put(s.seed.value_or(0));
  w.put(s.maxTokens);
  w.put(uint8_t(s.ignoreEos));
  w.bytes(s.stopTokenIds.data(), s.stopTokenIds.size() * sizeof(int32_t));
  w.put(s.logprobs);
  w.put(uint8_t(s.batchInvariant));
}

SamplingParams readSampling(Reader &r) {
  SamplingParams s;
  s.temperature = r.get<float>();
  s.topK = r.get<int64_t>();
  s.topP = r.get<float>();
  const bool hasSeed = r.get<uint8_t>();
  const uint64_t seed = r.get<uint64_t>();
  if (hasSeed)
    s.seed = seed;
  s.maxTokens = r.get<int64_t>();
  s.ignoreEos = r.get<uint8_t>();
  const std::string stops = r.text();
  s.stopTokenIds.resize(stops.size() / sizeof(int32_t));
  std::memcpy(s.stopTokenIds.data(), stops.data(), s.stopTokenIds.size() * sizeof(int32_t));
  s.logprobs = r.get<int32_t>();
  s.batchInvariant = r.get<uint8_t>();
  return s;
}

void writeTensor(Writer &w, const torch::Tensor &t) {
  const torch::Tensor c = t.contiguous().cpu();
  w.put(int8_t(c.scalar_type()));
  w.put(uint64_t(c.dim()));
  for (int64_t size : c.sizes())
    w.put(size);
  w.bytes(c.data_ptr(), size_t(c.numel()) * c.element_size());
}

torch::Tensor readTensor(Reader &r) {
  const auto type = torch::ScalarType(r.get<int8_t>());
  std::vector<int64_t> sizes(r.count(sizeof(int64_t)));
  for (int64_t &size : sizes)
    size = r.get<int64_t>();
  torch::Tensor t = torch::empty(sizes, torch::TensorOptions().dtype(type));
  const std::string data = r.text();
  if (data.size() != size_t(t.numel()) * t.element_size())
    throw InvalidInput("tensor-parallel server: a param from rank 0 has the wrong size");
  std::memcpy(t.data_ptr(), data.data(), data.size());
  return t;
}

} // namespace

RankLink::RankLink(TensorParallelGroup &group, session::ProgramRegistry &programs)
    : group(group), registry(programs),
      heartbeatEvery(std::chrono::seconds(RuntimeOptions::get().distTimeoutSeconds.value_or(60)) /
                     3) {}

std::string RankLink::encode(const RankMessage &message,
                             std::map<const session::Program *, int64_t> &programIds,
                             std::vector<std::shared_ptr<const session::Program>> &sent,
                             int64_t &programBytes) {
  Writer w;
  w.put(uint8_t(message.step));
  w.put(uint8_t(message.stop));
  w.put(uint64_t(message.ops.size()));
  for (const EngineOp &op : message.ops) {
    w.put(uint8_t(op.kind));
    if (op.kind == EngineOp::Kind::Abort) {
      w.put(op.sequence);
      continue;
    }
    const ForwardedRequest &r = op.request;
    w.put(uint64_t(r.prompts.size()));
    for (const std::vector<int32_t> &prompt : r.prompts)
      w.bytes(prompt.data(), prompt.size() * sizeof(int32_t));
    writeSampling(w, r.sampling);
    const session::Program *program = r.bound.program.get();
    if (!program) {
      w.put(int64_t(-1));
      continue;
    }
    auto [it, isNew] = programIds.emplace(program, int64_t(programIds.size()));
    w.put(it->second);
    w.put(uint8_t(isNew));
    if (isNew) {
      sent.push_back(r.bound.program);
      w.text(program->fileBytes());
      programBytes += int64_t(program->fileBytes().size());
    }
    w.text(r.bound.trace->name);
    w.put(uint64_t(r.bound.params.size()));
    for (const torch::Tensor &param : r.bound.params)
      writeTensor(w, param);
  }
  return std::move(w.out);
}

RankMessage RankLink::decode(const std::string &bytes, session::ProgramRegistry &registry,
                             std::map<int64_t, std::shared_ptr<const session::Program>> &programs) {
  Reader r(bytes);
  RankMessage message;
  message.step = r.get<uint8_t>();
  message.stop = r.get<uint8_t>();
  message.ops.resize(r.count(sizeof(uint8_t) + sizeof(int64_t)));
  for (EngineOp &op : message.ops) {
    op.kind = EngineOp::Kind(r.get<uint8_t>());
    if (op.kind == EngineOp::Kind::Abort) {
      op.sequence = r.get<int64_t>();
      continue;
    }
    if (op.kind != EngineOp::Kind::Admit)
      throw InvalidInput("tensor-parallel server: an unknown operation from rank 0");
    ForwardedRequest &req = op.request;
    req.prompts.resize(r.count(sizeof(uint64_t)));
    for (std::vector<int32_t> &prompt : req.prompts) {
      const std::string ids = r.text();
      prompt.resize(ids.size() / sizeof(int32_t));
      std::memcpy(prompt.data(), ids.data(), prompt.size() * sizeof(int32_t));
    }
    req.sampling = readSampling(r);
    const int64_t id = r.get<int64_t>();
    if (id < 0)
      continue;
    if (r.get<uint8_t>()) {
      std::string error;
      std::shared_ptr<const session::Program> loaded = registry.loadBytes(r.text(), error);
      if (!loaded)
        throw InvalidInput("tensor-parallel server: rank 0's program " + std::to_string(id) +
                           " does not load here: " + error);
      programs[id] = loaded;
    }
    auto it = programs.find(id);
    if (it == programs.end())
      throw InvalidInput("tensor-parallel server: rank 0 named program " + std::to_string(id) +
                         ", which it never sent");
    req.bound.program = it->second;
    std::string error;
    req.bound.trace = it->second->findTrace(r.text(), "", error);
    if (!req.bound.trace)
      throw InvalidInput("tensor-parallel server: " + error);
    req.bound.params.resize(r.count(1));
    for (torch::Tensor &param : req.bound.params)
      param = readTensor(r);
  }
  if (!r.done())
    throw InvalidInput("tensor-parallel server: a message from rank 0 has trailing bytes");
  return message;
}

void RankLink::send(const RankMessage &message) {
  const std::string bytes = encode(message, programIds, sent, counts.programBytes);
  torch::Tensor size = torch::tensor({int64_t(bytes.size())}, torch::kInt64);
  group.broadcast(size);
  torch::Tensor data = torch::empty({int64_t(bytes.size())}, torch::kUInt8);
  std::memcpy(data.data_ptr(), bytes.data(), bytes.size());
  group.broadcast(data);
  ++counts.messages;
  counts.bytes += int64_t(bytes.size());
  counts.collectives = group.stats();
}

RankMessage RankLink::receive() {
  torch::Tensor size = torch::zeros({1}, torch::kInt64);
  group.broadcast(size);
  torch::Tensor data = torch::empty({size.item<int64_t>()}, torch::kUInt8);
  group.broadcast(data);
  ++counts.messages;
  counts.bytes += data.numel();
  return decode(std::string(static_cast<const char *>(data.data_ptr()), size_t(data.numel())),
                registry, programs);
}

} // namespace nnsc::server
