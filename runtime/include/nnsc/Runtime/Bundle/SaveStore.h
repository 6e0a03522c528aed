//===- SaveStore.h - the values one request's kernels saved -----*- C++ -*-===//
//
// A capture of every layer at every step makes about 500 saves per request (96,000 for a run
// of 200 requests). Each save is one copy into blocks of memory the store owns, found again
// by (save index, step): no allocation, tensor or name per save. Tensors and names are made
// once, when the results are read.
//
//===----------------------------------------------------------------------===//

#ifndef NNSC_RUNTIME_BUNDLE_SAVESTORE_H
#define NNSC_RUNTIME_BUNDLE_SAVESTORE_H

#include "nnsc/Runtime/Bundle/Bundle.h"

#include <torch/torch.h>

#include <cstdint>
#include <map>
#include <utility>
#include <vector>

namespace nnsc {

class SaveStore {
public:
  /// Save `index` at `step` (per-step saves; -1 for one value per request).
  using Key = std::pair<int32_t, int64_t>;

  /// Stores a copy of `value` (any strides, rank <= NNSC_MAX_RANK, a dtype the ABI names) as
  /// the value of `key`, replacing an earlier one.
  void put(Key key, const nnsc_tensor &value);

  /// The stored values in key order, as tensors viewing the store's memory without a copy (a
  /// later put() of the same key and size writes into the same memory).
  std::vector<std::pair<Key, torch::Tensor>> values() const;

  size_t size() const { return records.size(); }
  /// Bytes of the values stored (without alignment padding).
  size_t bytes() const { return storedBytes; }
  /// Bytes the store would hold after put(key, value).
  size_t bytesAfter(Key key, const nnsc_tensor &value) const;
  /// Forgets every value (tensors from values() keep theirs).
  void clear();

private:
  struct Record {
    nnsc_dtype dtype;
    int32_t rank;
    int64_t shape[NNSC_MAX_RANK];
    size_t block, offset, bytes;
  };

  /// `bytes` of room, 64-byte aligned, in the current block or a new one.
  std::pair<size_t, size_t> reserve(size_t bytes);

  std::vector<torch::Tensor> blocks; // uint8
  size_t current = 0;                // the block being filled
  size_t used = 0;                   // bytes used in it
  std::map<Key, Record> records;
  size_t storedBytes = 0;
};

} // namespace nnsc

#endif // NNSC_RUNTIME_BUNDLE_SAVESTORE_H
