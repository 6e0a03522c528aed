//===- BundleRequestTest.cpp - a request's frame and its heap copies -----===//
//
// The kernels keep a value of run-time shape in the frame as a pointer to a malloc'd copy
// (docs/BundleABI.md, "The frame"); the request frees what is left when it restarts or ends:
// itself, or through the launcher when device kernels ran on the frame.
// Under `scripts/test --sanitize` LeakSanitizer checks that nothing is left and ASan that
// nothing is freed twice.
//
//===----------------------------------------------------------------------===//

#include "nnsc/Runtime/Bundle/BundleRequest.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

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

/// A launcher whose device is the test: it records what it is asked to free (the real one,
/// CudaBundleLauncher, needs a GPU: scripts/gpu-check runs it).
class RecordingLauncher final : public nnsc::DeviceKernelLauncher {
public:
  std::string run(const nnsc::BundleTrace &, const nnsc::BundleSite &, const nnsc_tensor &,
                  std::span<const nnsc_group>, const nnsc_runtime &) override {
    return "not a device";
  }
  std::string freeFrameHeap(std::span<void *const> pointers) override {
    freed.push_back({pointers.begin(), pointers.end()});
    return failure;
  }
  std::vector<std::vector<void *>> freed;
  std::string failure;
};

TEST(BundleRequest, AFrameDeviceKernelsRanOnIsFreedThroughTheLauncher) {
  BundleTrace trace = traceWithHeapSlots();
  auto launcher = std::make_shared<RecordingLauncher>();
  void *deviceHeapStandIn = std::malloc(8);
  {
    BundleRequest request(trace, {});
    std::memcpy(static_cast<uint8_t *>(request.frame()) + 32, &deviceHeapStandIn,
                sizeof deviceHeapStandIn);
    request.noteDeviceFrame(launcher);
    request.restart();
    EXPECT_EQ(slot(request, 32), nullptr);
    ASSERT_EQ(launcher->freed.size(), 1u);
    EXPECT_EQ(launcher->freed[0], std::vector<void *>{deviceHeapStandIn}); // the null slot at 8
                                                                           // is not passed
    // The destructor finds nothing left: no second call.
  }
  EXPECT_EQ(launcher->freed.size(), 1u);
  // Not freed on the host: a host free() above would make this a double free under ASan.
  std::free(deviceHeapStandIn);
}

TEST(BundleRequest, ALauncherThatCannotFreeDoesNotThrow) {
  BundleTrace trace = traceWithHeapSlots();
  auto launcher = std::make_shared<RecordingLauncher>();
  launcher->failure = "the device is gone";
  void *deviceHeapStandIn = std::malloc(8);
  {
    BundleRequest request(trace, {});
    std::memcpy(static_cast<uint8_t *>(request.frame()) + 8, &deviceHeapStandIn,
                sizeof deviceHeapStandIn);
    request.noteDeviceFrame(launcher);
    testing::internal::CaptureStderr();
  } // the destructor reports and goes on
  EXPECT_NE(testing::internal::GetCapturedStderr().find("the device is gone"), std::string::npos);
  EXPECT_EQ(launcher->freed.size(), 1u);
  std::free(deviceHeapStandIn);
}

} // namespace
