//===- CudaSiteCallTest.cpp - the host's side of a CUDA site call -------===//
//
// runCudaSiteCall against a scripted device: each launch writes the status, events and sink
// a device kernel would, including the malformed ones a broken kernel could write. What real
// device code does through the same function is in CUDAEmulationTest.cpp.
//
//===----------------------------------------------------------------------===//

#include "nnsc/Runtime/Bundle/CudaSiteCall.h"
#include "nnsc/Runtime/Bundle/Bundle.h"

#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <string>
#include <vector>

namespace {

using nnsc::CudaSiteBuffers;

/// Device memory that is host memory; each launch runs the next step of a script.
class ScriptedDevice final : public nnsc::DevicePort {
public:
  using Launch = std::function<void(nnsc_cuda_status &, ScriptedDevice &)>;
  ScriptedDevice() {
    buffers.status = &status;
    buffers.events = events.data();
    buffers.eventCapacity = int64_t(events.size());
    buffers.sink = sink.data();
    buffers.sinkBytes = int64_t(sink.size());
  }

  void toHost(void *dest, const void *source, int64_t bytes) override {
    std::memcpy(dest, source, size_t(bytes));
  }
  void toDevice(void *dest, const void *source, int64_t bytes) override {
    std::memcpy(dest, source, size_t(bytes));
  }
  void *moduleOutput(int64_t bytes) override {
    output.assign(size_t(bytes), 0);
    return output.data();
  }
  void launch() override {
    ASSERT_LT(size_t(launched), script.size());
    script[size_t(launched++)](status, *this);
  }

  /// Appends an event; a value of `floats` floats goes into the sink.
  void record(nnsc_cuda_event event, std::vector<float> floats = {}) {
    if (!floats.empty()) {
      char *at = sink.data() + status.sink_used;
      std::memcpy(at, floats.data(), floats.size() * sizeof(float));
      status.sink_used += int64_t(floats.size() * sizeof(float));
      event.value = {at, NNSC_DTYPE_F32, 1, {int64_t(floats.size())}, {1}};
    }
    events[size_t(status.num_events++)] = event;
  }

  nnsc_cuda_status status{};
  std::vector<nnsc_cuda_event> events = std::vector<nnsc_cuda_event>(8);
  std::vector<char> sink = std::vector<char>(256);
  std::vector<char> output;
  CudaSiteBuffers buffers;
  std::vector<Launch> script;
  int launched = 0;
};

/// The callbacks, as text.
struct Calls {
  std::vector<std::string> log;
  static Calls &of(void *ctx) { return *static_cast<Calls *>(ctx); }
  static std::string floats(const nnsc_tensor &t) {
    std::string s;
    for (int64_t i = 0; i < t.shape[0]; ++i)
      s += (i ? "," : "") + std::to_string(int(static_cast<const float *>(t.data)[i]));
    return s;
  }
  nnsc_runtime runtime() {
    return {this,
            [](void *ctx, int32_t module, const nnsc_tensor *in, nnsc_tensor *out) -> int32_t {
              of(ctx).log.push_back("call_module " + std::to_string(module) + " " + floats(*in));
              for (int64_t i = 0; i < out->shape[0]; ++i)
                static_cast<float *>(out->data)[i] = 10.0f * float(i + 1);
              return 7;
            },
            [](void *ctx, void *, const char *message, int64_t arg0, int64_t arg1) {
              of(ctx).log.push_back("error " + nnsc::errorMessage(message, arg0, arg1));
            },
            [](void *ctx, void *, int32_t index, int64_t step, const nnsc_tensor *value) {
              of(ctx).log.push_back("save " + std::to_string(index) + "@" + std::to_string(step) +
                                    " " + floats(*value));
            },
            [](void *ctx, void *) { of(ctx).log.push_back("stop"); },
            [](void *ctx, void *) { of(ctx).log.push_back("finish"); },
            [](void *ctx, void *) { of(ctx).log.push_back("skip"); }};
  }
};

const char *const kMessages[] = {"index {0} is out of range for a size of {1}"};
const nnsc_cuda_code kCode{"", "sm_90", 0, nullptr, 1, kMessages};

nnsc_cuda_event event(nnsc_cuda_event_kind kind, int32_t index = 0) {
  nnsc_cuda_event e{};
  e.kind = kind;
  e.index = index;
  return e;
}

TEST(CudaSiteCall, ReplaysEventsRunsTheModuleCallAndResumes) {
  ScriptedDevice device;
  device.script.push_back([](nnsc_cuda_status &s, ScriptedDevice &d) {
    EXPECT_EQ(s.resume, 0);
    d.record(event(NNSC_CUDA_EVENT_SAVE, 2), {1, 2, 3});
    nnsc_cuda_event call = event(NNSC_CUDA_EVENT_CALL_MODULE, 5);
    call.output = {nullptr, NNSC_DTYPE_F32, 1, {2}, {1}};
    d.record(call, {4, 5});
    s.resume = 1;
  });
  device.script.push_back([](nnsc_cuda_status &s, ScriptedDevice &d) {
    // The host reset the counters and handed over the module's output and status.
    EXPECT_EQ(s.num_events, 0);
    EXPECT_EQ(s.sink_used, 0);
    EXPECT_EQ(s.module_status, 7);
    ASSERT_NE(s.module_output, nullptr);
    EXPECT_EQ(static_cast<float *>(s.module_output)[1], 20.0f);
    s.resume = 0;
    d.record(event(NNSC_CUDA_EVENT_SKIP));
    // The error's numbers travel in the event.
    nnsc_cuda_event error = event(NNSC_CUDA_EVENT_ERROR, 0);
    error.error_args[0] = -1000000;
    error.error_args[1] = 49152;
    d.record(error);
    d.record(event(NNSC_CUDA_EVENT_STOP));
    d.record(event(NNSC_CUDA_EVENT_FINISH));
  });
  Calls calls;
  nnsc_runtime rt = calls.runtime();
  int64_t launches = 0;
  EXPECT_EQ(nnsc::runCudaSiteCall(device, device.buffers, kCode, rt, 10, &launches), "");
  EXPECT_EQ(launches, 2);
  EXPECT_EQ(calls.log, (std::vector<std::string>{"save 2@0 1,2,3", "call_module 5 4,5", "skip",
                                                 "error index -1000000 is out of range for a "
                                                 "size of 49152",
                                                 "stop", "finish"}));
}

/// Each malformed launch fails the call with a reason, and nothing after it is replayed.
struct Malformed {
  const char *name;
  ScriptedDevice::Launch launch;
  const char *failure;
};

class CudaSiteCallMalformed : public ::testing::TestWithParam<Malformed> {};

TEST_P(CudaSiteCallMalformed, FailsTheCall) {
  ScriptedDevice device;
  device.script.push_back(GetParam().launch);
  Calls calls;
  nnsc_runtime rt = calls.runtime();
  EXPECT_EQ(nnsc::runCudaSiteCall(device, device.buffers, kCode, rt, 10), GetParam().failure);
  for (const std::string &call : calls.log)
    EXPECT_EQ(call.rfind("finish", 0), std::string::npos) << "replayed past the failure";
}

INSTANTIATE_TEST_SUITE_P(
    Events, CudaSiteCallMalformed,
    ::testing::Values(Malformed{"MessageIndex",
                                [](nnsc_cuda_status &, ScriptedDevice &d) {
                                  d.record(event(NNSC_CUDA_EVENT_ERROR, 3));
                                  d.record(event(NNSC_CUDA_EVENT_FINISH));
                                },
                                "an error event names message 3 of 1"},
                      Malformed{"EventOverflow",
                                [](nnsc_cuda_status &s, ScriptedDevice &) { s.num_events = 9; },
                                "the kernel recorded 9 events, more than the 8 it had room for"},
                      Malformed{"SinkOverflow",
                                [](nnsc_cuda_status &, ScriptedDevice &d) {
                                  d.record(event(NNSC_CUDA_EVENT_SAVE)); // value.data stays null
                                },
                                "a save did not fit the sink of 256 bytes"},
                      Malformed{"SaveOutsideSink",
                                [](nnsc_cuda_status &s, ScriptedDevice &d) {
                                  d.record(event(NNSC_CUDA_EVENT_SAVE), {1, 2});
                                  s.sink_used = 4; // says one float, the save has two
                                },
                                "a save lies outside the used sink"},
                      Malformed{"ModuleCallNotLast",
                                [](nnsc_cuda_status &s, ScriptedDevice &d) {
                                  d.record(event(NNSC_CUDA_EVENT_CALL_MODULE), {1});
                                  d.record(event(NNSC_CUDA_EVENT_FINISH));
                                  s.resume = 1;
                                },
                                "a module call event that does not end a suspended launch"},
                      Malformed{"SuspendedWithoutCall",
                                [](nnsc_cuda_status &s, ScriptedDevice &) { s.resume = 2; },
                                "the kernel suspended without a module call"},
                      Malformed{"UnknownKind",
                                [](nnsc_cuda_status &, ScriptedDevice &d) {
                                  d.record(event(nnsc_cuda_event_kind(42)));
                                },
                                "an event of unknown kind 42"}),
    [](const ::testing::TestParamInfo<Malformed> &info) { return info.param.name; });

TEST(CudaSiteCall, StopsAKernelThatNeverStopsSuspending) {
  ScriptedDevice device;
  for (int i = 0; i < 3; ++i)
    device.script.push_back([](nnsc_cuda_status &s, ScriptedDevice &d) {
      nnsc_cuda_event call = event(NNSC_CUDA_EVENT_CALL_MODULE);
      call.output = {nullptr, NNSC_DTYPE_F32, 1, {1}, {1}};
      d.record(call, {1});
      s.resume = 1;
    });
  Calls calls;
  nnsc_runtime rt = calls.runtime();
  EXPECT_EQ(nnsc::runCudaSiteCall(device, device.buffers, kCode, rt, 3),
            "the kernel still suspends after 3 launches");
  EXPECT_EQ(device.launched, 3);
}

} // namespace
