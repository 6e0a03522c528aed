//===- SaveHandleStore.h - large saves kept for a later GET -----*- C++ -*-===//
//
// Saves too large for a JSON body are kept here as one safetensors file each, under an
// unguessable handle (128 random bits from the kernel), for `GET /v1/nns/saves/{handle}`.
// The store is bounded in bytes and entries expire; when a new entry does not fit, the
// oldest go first. Its errors say which limit was hit.
//
//===----------------------------------------------------------------------===//

#ifndef NNSC_SERVER_SAVEHANDLESTORE_H
#define NNSC_SERVER_SAVEHANDLESTORE_H

#include <chrono>
#include <cstddef>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

namespace nnsc::server {

class SaveHandleStore {
public:
  using Clock = std::chrono::steady_clock;

  SaveHandleStore(size_t capacityBytes, std::chrono::seconds ttl)
      : capacity(capacityBytes), ttl(ttl) {}

  /// Keeps `blob` and returns its handle, or nullopt with `error` when it is larger than
  /// the whole store.
  std::optional<std::string> put(std::string blob, std::string &error);
  /// The blob of `handle`, or null when it is unknown, expired or was dropped for room.
  std::shared_ptr<const std::string> get(const std::string &handle);

  size_t capacityBytes() const { return capacity; }
  std::chrono::seconds timeToLive() const { return ttl; }

private:
  struct Entry {
    std::shared_ptr<const std::string> blob;
    Clock::time_point expires;
    std::list<std::string>::iterator age;
  };
  void dropExpired(Clock::time_point now);
  void drop(const std::string &handle);

  size_t capacity;
  std::chrono::seconds ttl;
  std::mutex mutex;
  size_t used = 0;
  std::map<std::string, Entry> entries;
  /// Handles, oldest first.
  std::list<std::string> order;
};

} // namespace nnsc::server

#endif // NNSC_SERVER_SAVEHANDLESTORE_H
