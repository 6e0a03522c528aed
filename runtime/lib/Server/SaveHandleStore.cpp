//===- SaveHandleStore.cpp - large saves kept for a later GET -------------===//

#include "nnsc/Server/SaveHandleStore.h"

#include <cstdio>
#include <stdexcept>
#include <sys/random.h>

namespace nnsc::server {

namespace {

/// 32 hex digits of kernel randomness.
std::string newHandle() {
  unsigned char bytes[16];
  size_t got = 0;
  while (got < sizeof(bytes)) {
    ssize_t n = getrandom(bytes + got, sizeof(bytes) - got, 0);
    if (n < 0)
      throw std::runtime_error("getrandom failed");
    got += size_t(n);
  }
  std::string hex;
  char digits[3];
  for (unsigned char b : bytes) {
    std::snprintf(digits, sizeof(digits), "%02x", b);
    hex += digits;
  }
  return hex;
}

} // namespace

std::optional<std::string> SaveHandleStore::put(std::string blob, std::string &error) {
  if (blob.size() > capacity) {
    error = "the saves are " + std::to_string(blob.size()) +
            " bytes, more than the whole saves store (" + std::to_string(capacity) +
            " bytes, --saves-store-bytes)";
    return std::nullopt;
  }
  std::lock_guard<std::mutex> lock(mutex);
  const Clock::time_point now = Clock::now();
  dropExpired(now);
  while (used + blob.size() > capacity && !order.empty())
    drop(order.front());
  std::string handle = newHandle();
  used += blob.size();
  order.push_back(handle);
  entries[handle] = {std::make_shared<const std::string>(std::move(blob)), now + ttl,
                     std::prev(order.end())};
  return handle;
}

std::shared_ptr<const std::string> SaveHandleStore::get(const std::string &handle) {
  std::lock_guard<std::mutex> lock(mutex);
  dropExpired(Clock::now());
  auto it = entries.find(handle);
  return it == entries.end() ? nullptr : it->second.blob;
}

void SaveHandleStore::dropExpired(Clock::time_point now) {
  while (!order.empty() && entries.at(order.front()).expires <= now)
    drop(order.front());
}

void SaveHandleStore::drop(const std::string &handle) {
  auto it = entries.find(handle);
  used -= it->second.blob->size();
  order.erase(it->second.age);
  entries.erase(it);
}

} // namespace nnsc::server
