//===- SaveStore.cpp - the values one request's kernels saved ---*- C++ -*-===//

#include "nnsc/Runtime/Bundle/SaveStore.h"

#include "nnsc/Runtime/Bundle/BundleRequest.h"

#include <algorithm>
#include <cstring>

namespace nnsc {

namespace {

/// Values start 64-byte aligned, so every dtype's view of a block is aligned.
constexpr size_t Align = 64;
/// Blocks grow from 64 KiB (a request saving one row per step never needs more) by doubling
/// up to 4 MiB (a layer's prompt rows are about 100 KiB).
constexpr size_t FirstBlock = size_t(64) << 10;
constexpr size_t MaxBlock = size_t(4) << 20;

bool isContiguous(const nnsc_tensor &v) {
  int64_t expected = 1;
  for (int32_t r = v.rank - 1; r >= 0; --r) {
    if (v.shape[r] != 1 && v.strides[r] != expected)
      return false;
    expected *= v.shape[r];
  }
  return true;
}

} // namespace

std::pair<size_t, size_t> SaveStore::reserve(size_t bytes) {
  const size_t need = (bytes + Align - 1) / Align * Align;
  for (; current < blocks.size(); ++current, used = 0)
    if (used + need <= size_t(blocks[current].numel())) {
      const size_t offset = used;
      used += need;
      return {current, offset};
    }
  const size_t grow =
      blocks.empty() ? FirstBlock : std::min(MaxBlock, 2 * size_t(blocks.back().numel()));
  blocks.push_back(torch::empty({int64_t(std::max(need, grow))}, torch::kUInt8));
  current = blocks.size() - 1;
  used = need;
  return {current, 0};
}

size_t SaveStore::bytesAfter(Key key, const nnsc_tensor &value) const {
  size_t bytes = dtypeBytes(value.dtype);
  for (int32_t r = 0; r < value.rank; ++r)
    bytes *= size_t(value.shape[r]);
  auto it = records.find(key);
  return storedBytes - (it == records.end() ? 0 : it->second.bytes) + bytes;
}

void SaveStore::put(Key key, const nnsc_tensor &value) {
  TORCH_CHECK(value.rank >= 0 && value.rank <= NNSC_MAX_RANK && dtypeBytes(value.dtype),
              "SaveStore: a value of rank ", value.rank, " and dtype ", int(value.dtype));
  Record record{value.dtype, value.rank, {}, 0, 0, dtypeBytes(value.dtype)};
  for (int32_t r = 0; r < value.rank; ++r) {
    record.shape[r] = value.shape[r];
    record.bytes *= size_t(value.shape[r]);
  }
  auto it = records.find(key);
  if (it != records.end() && it->second.bytes == record.bytes) {
    record.block = it->second.block;
    record.offset = it->second.offset;
  } else {
    std::tie(record.block, record.offset) = reserve(record.bytes);
  }
  uint8_t *dest = blocks[record.block].data_ptr<uint8_t>() + record.offset;
  if (record.bytes == 0) {
    // Nothing to copy (and `value.data` may be null).
  } else if (isContiguous(value)) {
    std::memcpy(dest, value.data, record.bytes);
  } else {
    const torch::Tensor source = tensorOf(value);
    torch::from_blob(dest, source.sizes(), source.options()).copy_(source);
  }
  if (it != records.end())
    storedBytes -= it->second.bytes;
  storedBytes += record.bytes;
  records.insert_or_assign(key, record);
}

std::vector<std::pair<SaveStore::Key, torch::Tensor>> SaveStore::values() const {
  std::vector<std::pair<Key, torch::Tensor>> out;
  out.reserve(records.size());
  for (const auto &[key, r] : records) {
    torch::Tensor bytes = blocks[r.block].narrow(0, int64_t(r.offset), int64_t(r.bytes));
    out.emplace_back(
        key,
        bytes.view(toTorchDtype(r.dtype)).view(std::vector<int64_t>(r.shape, r.shape + r.rank)));
  }
  return out;
}

void SaveStore::clear() {
  // Tensors handed out by values() keep their blocks alive; new values go to new blocks.
  records.clear();
  blocks.clear();
  current = 0;
  used = 0;
}

} // namespace nnsc
