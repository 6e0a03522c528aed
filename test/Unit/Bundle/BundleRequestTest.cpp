//===- BundleRequestTest.cpp - a request's frame and its heap copies -----===//
//
// The kernels keep a value of run-time shape in the frame as a pointer to a malloc'd copy
// (docs/BundleABI.md, "The frame"); the request frees what is left when it restarts or ends.
// Under `scripts/test --sanitize` LeakSanitizer checks that nothing is left and ASan that
// nothing is freed twice.
//
//===----------------------------------------------------------------------===//

#include "nnsc/Runtime/Bundle/BundleRequest.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>

namespace {

using nnsc::BundleRequest;
using nnsc::BundleTrace;

BundleTrace traceWithHeapSlots() {
  BundleTrace trace{};
  trace.name = "t";
  trace.frameBytes = 48;
  trace.frameHeapSlots = {8, 32};
  return trace;
}

void *slot(BundleRequest &request, int64_t offset) {
  void *pointer = nullptr;
  std::memcpy(&pointer, static_cast<uint8_t *>(request.frame()) + offset, sizeof pointer);
  return pointer;
}

void storeCopy(BundleRequest &request, int64_t offset, size_t bytes) {
  void *copy = std::malloc(bytes); // what a kernel's memref.alloc does
  std::memcpy(static_cast<uint8_t *>(request.frame()) + offset, &copy, sizeof copy);
}

TEST(BundleRequest, RestartFreesAndClearsTheHeapSlots) {
  BundleTrace trace = traceWithHeapSlots();
  BundleRequest request(trace, {});
  storeCopy(request, 8, 18432);
  storeCopy(request, 32, 64);
  request.restart();
  EXPECT_EQ(slot(request, 8), nullptr);
  EXPECT_EQ(slot(request, 32), nullptr);
  // A slot the kernels never wrote (null) is fine to release.
  storeCopy(request, 32, 16);
} // the destructor frees the copy at 32

TEST(BundleRequest, AFrameDeviceKernelsRanOnIsNotFreedOnTheHost) {
  BundleTrace trace = traceWithHeapSlots();
  void *deviceHeapStandIn = std::malloc(8);
  {
    BundleRequest request(trace, {});
    std::memcpy(static_cast<uint8_t *>(request.frame()) + 8, &deviceHeapStandIn,
                sizeof deviceHeapStandIn);
    request.noteDeviceFrame();
    request.restart();
    EXPECT_EQ(slot(request, 8), nullptr); // zeroed, not freed
  }
  std::free(deviceHeapStandIn); // still ours: a host free() of it above would make this a
                                // double free under ASan
}

} // namespace
