//===- CudaSiteCall.cpp - the host's side of a CUDA site call ---*- C++ -*-===//

#include "nnsc/Runtime/Bundle/CudaSiteCall.h"

#include "nnsc/Runtime/Bundle/Bundle.h"

#include <vector>

namespace nnsc {

int64_t contiguousBytes(const nnsc_tensor &t) {
  const int64_t element = int64_t(dtypeBytes(nnsc_dtype(t.dtype)));
  if (element == 0 || t.rank < 0 || t.rank > NNSC_MAX_RANK)
    return -1;
  int64_t bytes = element;
  for (int32_t d = 0; d < t.rank; ++d) {
    if (t.shape[d] < 0 || (t.shape[d] > 0 && bytes > INT64_MAX / t.shape[d]))
      return -1;
    bytes *= t.shape[d];
  }
  return bytes;
}

namespace {

/// Row-major strides for `t`'s shape.
void setContiguousStrides(nnsc_tensor &t) {
  int64_t stride = 1;
  for (int32_t d = t.rank - 1; d >= 0; --d) {
    t.strides[d] = stride;
    stride *= t.shape[d];
  }
}

/// One launch's events, replayed on the host.
class Replay {
public:
  Replay(const CudaSiteBuffers &buffers, const nnsc_cuda_code &code, const nnsc_runtime &rt,
         const std::vector<char> &sink, int64_t sinkUsed)
      : buffers(buffers), code(code), rt(rt), sink(sink), sinkUsed(sinkUsed) {}

  /// Replays `event`; returns "" or why the call fails.
  std::string apply(const nnsc_cuda_event &event, bool last, bool suspended) {
    switch (event.kind) {
    case NNSC_CUDA_EVENT_ERROR:
      if (event.index < 0 || event.index >= code.num_messages)
        return "an error event names message " + std::to_string(event.index) + " of " +
               std::to_string(code.num_messages);
      rt.report_error(rt.ctx, event.request, code.messages[event.index], event.error_args[0],
                      event.error_args[1]);
      return "";
    case NNSC_CUDA_EVENT_SAVE: {
      nnsc_tensor value = event.value;
      if (std::string error = rebase(value, "a save"); !error.empty())
        return error;
      rt.save(rt.ctx, event.request, event.index, event.step, &value);
      return "";
    }
    case NNSC_CUDA_EVENT_STOP:
      rt.stop(rt.ctx, event.request);
      return "";
    case NNSC_CUDA_EVENT_FINISH:
      rt.finish(rt.ctx, event.request);
      return "";
    case NNSC_CUDA_EVENT_SKIP:
      rt.skip(rt.ctx, event.request);
      return "";
    case NNSC_CUDA_EVENT_CALL_MODULE: {
      if (!last || !suspended)
        return "a module call event that does not end a suspended launch";
      nnsc_tensor input = event.value;
      if (std::string error = rebase(input, "a module input"); !error.empty())
        return error;
      moduleOutput = event.output;
      const int64_t bytes = contiguousBytes(moduleOutput);
      if (bytes < 0)
        return "a module call with an invalid output shape";
      outputBytes.assign(size_t(bytes), 0);
      moduleOutput.data = outputBytes.data();
      setContiguousStrides(moduleOutput);
      moduleStatus = rt.call_module(rt.ctx, event.index, &input, &moduleOutput);
      calledModule = true;
      return "";
    }
    default:
      return "an event of unknown kind " + std::to_string(event.kind);
    }
  }

  bool calledModule = false;
  int32_t moduleStatus = 0;
  std::vector<char> outputBytes;
  nnsc_tensor moduleOutput{};

private:
  /// Points `t` (data in the device sink) at the host copy of the sink.
  std::string rebase(nnsc_tensor &t, const char *what) const {
    if (!t.data)
      return std::string(what) + " did not fit the sink of " + std::to_string(buffers.sinkBytes) +
             " bytes";
    const int64_t offset = static_cast<const char *>(t.data) - buffers.sink;
    const int64_t bytes = contiguousBytes(t);
    if (bytes < 0 || offset < 0 || offset > sinkUsed || bytes > sinkUsed - offset)
      return std::string(what) + " lies outside the used sink";
    t.data = const_cast<char *>(sink.data()) + offset;
    return "";
  }

  const CudaSiteBuffers &buffers;
  const nnsc_cuda_code &code;
  const nnsc_runtime &rt;
  const std::vector<char> &sink;
  int64_t sinkUsed;
};

} // namespace

std::string runCudaSiteCall(DevicePort &port, const CudaSiteBuffers &buffers,
                            const nnsc_cuda_code &code, const nnsc_runtime &rt, int64_t maxLaunches,
                            int64_t *launches) {
  nnsc_cuda_status status{};
  status.events = buffers.events;
  status.event_capacity = buffers.eventCapacity;
  status.sink = buffers.sink;
  status.sink_bytes = buffers.sinkBytes;
  status.scratch = buffers.scratch;
  std::vector<nnsc_cuda_event> events;
  std::vector<char> sink;
  int64_t count = 0;
  if (launches)
    *launches = 0;
  while (true) {
    port.toDevice(buffers.status, &status, sizeof status);
    if (count == maxLaunches)
      return "the kernel still suspends after " + std::to_string(maxLaunches) + " launches";
    port.launch();
    ++count;
    if (launches)
      *launches = count;
    port.toHost(&status, buffers.status, sizeof status);
    if (status.num_events < 0 || status.num_events > buffers.eventCapacity)
      return "the kernel recorded " + std::to_string(status.num_events) +
             " events, more than the " + std::to_string(buffers.eventCapacity) + " it had room for";
    if (status.sink_used < 0 || status.sink_used > buffers.sinkBytes)
      return "the kernel reports " + std::to_string(status.sink_used) + " sink bytes used of " +
             std::to_string(buffers.sinkBytes);
    // No empty copies: an empty vector's data() may be null, which memcpy must not get.
    events.resize(size_t(status.num_events));
    if (status.num_events > 0)
      port.toHost(events.data(), buffers.events,
                  status.num_events * int64_t(sizeof(nnsc_cuda_event)));
    sink.resize(size_t(status.sink_used));
    if (status.sink_used > 0)
      port.toHost(sink.data(), buffers.sink, status.sink_used);

    const bool suspended = status.resume != 0;
    Replay replay(buffers, code, rt, sink, status.sink_used);
    for (size_t i = 0; i < events.size(); ++i)
      if (std::string error = replay.apply(events[i], i + 1 == events.size(), suspended);
          !error.empty())
        return error;
    if (!suspended)
      return "";
    if (!replay.calledModule)
      return "the kernel suspended without a module call";
    void *output = port.moduleOutput(int64_t(replay.outputBytes.size()));
    if (!replay.outputBytes.empty())
      port.toDevice(output, replay.outputBytes.data(), int64_t(replay.outputBytes.size()));
    status.module_output = output;
    status.module_status = replay.moduleStatus;
    status.num_events = 0;
    status.sink_used = 0;
  }
}

} // namespace nnsc
