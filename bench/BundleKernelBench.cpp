//===- BundleKernelBench.cpp - bundle kernels: time vs bytes ----*- C++ -*-===//
//
// Time per call of compiled site kernels against the bytes they touch, for steering
// (`h[rows] += vec`: read + write every row, read the param) and last-token capture (the
// kernel hands one row per group to rt->save, which copies it as the runtime would), at
// SmolLM2's hidden size (576) and at 4096, for a decode batch (64 sequences x 1 token) and a
// prefill batch (4 x 512 tokens). The kernels are the lit tests' kernel IR
// (test/Target/Bundle), compiled by nns-bundle-emit for this CPU; LibTorch's in-place add on
// the same rows is timed alongside. Prints one line per case (docs/Performance.md).
//
//   nnsc-bench-bundle [--repeat R]
//
//===----------------------------------------------------------------------===//

#include "nnsc/Bundle/BundleABI.h"

#include <torch/torch.h>

#include <dlfcn.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

namespace {

/// Compiles test/Target/Bundle/`name` and returns the kernel of its first trace's first site.
nnsc_site_kernel compileKernel(const std::string &name) {
  std::string out = "/tmp/nnsc-bench-" + std::to_string(getpid()) + "-" + name + ".nnsb";
  std::string command = std::string(NNSC_BUNDLE_EMIT) + " " + NNSC_SOURCE_DIR +
                        "/test/Target/Bundle/" + name + " -emit=bundle -o " + out;
  if (std::system(command.c_str()) != 0) {
    std::fprintf(stderr, "nnsc-bench-bundle: '%s' failed\n", command.c_str());
    std::exit(1);
  }
  void *handle = dlopen(out.c_str(), RTLD_NOW | RTLD_LOCAL);
  std::remove(out.c_str());
  if (!handle) {
    std::fprintf(stderr, "nnsc-bench-bundle: %s\n", dlerror());
    std::exit(1);
  }
  auto query = reinterpret_cast<nnsc_bundle_query_fn>(dlsym(handle, NNSC_BUNDLE_QUERY_SYMBOL));
  return query()->traces[0].sites[0].kernel;
}

nnsc_tensor abiTensor(const torch::Tensor &t) {
  nnsc_tensor view{};
  view.data = t.data_ptr();
  view.dtype = NNSC_DTYPE_F32;
  view.rank = static_cast<int32_t>(t.dim());
  for (int64_t d = 0; d < t.dim(); ++d) {
    view.shape[d] = t.size(d);
    view.strides[d] = t.stride(d);
  }
  return view;
}

/// Best time in microseconds of one call, over `repeat` batches of calls.
double timeCall(const std::function<void()> &call, int repeat) {
  const int callsPerBatch = 50;
  double best = 1e30;
  for (int r = 0; r < repeat; ++r) {
    auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < callsPerBatch; ++i)
      call();
    std::chrono::duration<double, std::micro> elapsed = std::chrono::steady_clock::now() - start;
    best = std::min(best, elapsed.count() / callsPerBatch);
  }
  return best;
}

/// Where rt->save copies rows: preallocated, as the runtime's result buffers are.
struct SaveSink {
  std::vector<float> buffer;
  size_t next = 0;
};

void report(const char *kernel, int64_t hidden, int64_t groups, int64_t rows, double bytes,
            double us, double torchUs) {
  std::printf("%-7s hidden=%-5lld groups=%-3lld tokens=%-5lld bytes=%-9.0f kernel_us=%-8.2f "
              "GB/s=%-6.1f torch_us=%.2f\n",
              kernel, static_cast<long long>(hidden), static_cast<long long>(groups),
              static_cast<long long>(groups * rows), bytes, us, bytes / us / 1e3, torchUs);
}

} // namespace

int main(int argc, char **argv) {
  int repeat = 20;
  for (int i = 1; i + 1 < argc; i += 2)
    if (!std::strcmp(argv[i], "--repeat"))
      repeat = std::atoi(argv[i + 1]);
  at::set_num_threads(1);
  nnsc_site_kernel steer = compileKernel("steer.mlir");
  nnsc_site_kernel capture = compileKernel("capture.mlir");

  for (int64_t hidden : {576, 4096}) {
    for (auto [numGroups, rows] : {std::pair<int64_t, int64_t>{64, 1}, {4, 512}}) {
      torch::Tensor value = torch::randn({numGroups * rows, hidden});
      torch::Tensor vec = torch::randn({hidden});
      nnsc_tensor param = abiTensor(vec);
      std::vector<nnsc_group> groups(numGroups);
      for (int64_t g = 0; g < numGroups; ++g) {
        groups[g] = nnsc_group{};
        groups[g].row = g * rows;
        groups[g].rows = rows;
        groups[g].step = rows == 1 ? 1 : 0;
        groups[g].params = &param;
      }
      nnsc_tensor site = abiTensor(value);
      SaveSink sink{std::vector<float>(numGroups * hidden), 0};
      nnsc_runtime rt{};
      rt.ctx = &sink;
      rt.save = [](void *ctx, void *, int32_t, int64_t, const nnsc_tensor *t) {
        auto *s = static_cast<SaveSink *>(ctx);
        std::memcpy(s->buffer.data() + s->next, t->data, t->shape[0] * sizeof(float));
        s->next = (s->next + t->shape[0]) % s->buffer.size();
      };

      double steerUs = timeCall(
          [&] { steer(&site, groups.data(), static_cast<int32_t>(numGroups), &rt); }, repeat);
      double torchSteerUs = timeCall(
          [&] {
            for (const nnsc_group &g : groups)
              value.slice(0, g.row, g.row + g.rows).add_(vec);
          },
          repeat);
      double steerBytes = 2.0 * numGroups * rows * hidden * 4 + numGroups * hidden * 4;
      report("steer", hidden, numGroups, rows, steerBytes, steerUs, torchSteerUs);

      double captureUs = timeCall(
          [&] { capture(&site, groups.data(), static_cast<int32_t>(numGroups), &rt); }, repeat);
      torch::Tensor out = torch::empty({numGroups, hidden});
      double torchCaptureUs = timeCall(
          [&] {
            for (int64_t g = 0; g < numGroups; ++g)
              out[g].copy_(value[groups[g].row + groups[g].rows - 1]);
          },
          repeat);
      double captureBytes = 2.0 * numGroups * hidden * 4; // read the row, write the copy
      report("capture", hidden, numGroups, rows, captureBytes, captureUs, torchCaptureUs);
    }
  }
  return 0;
}
