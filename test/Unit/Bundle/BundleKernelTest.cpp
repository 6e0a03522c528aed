//===- BundleKernelTest.cpp - bundle kernels vs LibTorch ------------------===//
//
// Differential tests of compiled bundles: the lit tests' steering and last-token capture
// kernels are compiled with nns-bundle-emit, loaded with the runtime's BundleLoader and called
// on LibTorch site tensors with several groups (mixed row ranges, steps, params); every write
// and save is compared with the same program evaluated directly in LibTorch.
//
//===----------------------------------------------------------------------===//

#include "KernelIRBundle.h"

#include "nnsc/Runtime/Bundle/BundleLoader.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <map>

namespace {

using namespace nnsc;

/// What the kernels told the runtime, per request.
struct Calls {
  std::map<intptr_t, std::string> errors;
  std::map<intptr_t, std::pair<int64_t, torch::Tensor>> saves; ///< request -> (step, value)
};

Calls *callsOf(void *ctx) { return static_cast<Calls *>(ctx); }

nnsc_runtime runtimeFor(Calls &calls) {
  nnsc_runtime rt{};
  rt.ctx = &calls;
  rt.report_error = [](void *ctx, void *request, const char *message, int64_t, int64_t) {
    callsOf(ctx)->errors[reinterpret_cast<intptr_t>(request)] = message;
  };
  rt.save = [](void *ctx, void *request, int32_t index, int64_t step, const nnsc_tensor *value) {
    ASSERT_EQ(index, 0);
    ASSERT_EQ(value->dtype, NNSC_DTYPE_F32);
    std::vector<int64_t> shape(value->shape, value->shape + value->rank);
    std::vector<int64_t> strides(value->strides, value->strides + value->rank);
    torch::Tensor copy = torch::from_blob(value->data, shape, strides, torch::kFloat32).clone();
    callsOf(ctx)->saves[reinterpret_cast<intptr_t>(request)] = {step, copy};
  };
  return rt;
}

/// The ABI view of a float tensor (any strides).
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

nnsc_group group(int64_t row, int64_t rows, int64_t step, intptr_t request,
                 const nnsc_tensor *params) {
  nnsc_group g{};
  g.row = row;
  g.rows = rows;
  g.position = step == 0 ? 0 : 10 + step;
  g.step = step;
  g.params = params;
  g.request = reinterpret_cast<void *>(request);
  return g;
}

class BundleKernelTest : public ::testing::Test {
protected:
  BundleKernelTest() : architecture(test::smolLM2Config()) { torch::manual_seed(11); }

  std::unique_ptr<Bundle> load(const std::string &name) {
    std::string error;
    std::unique_ptr<Bundle> bundle =
        loadBundle(test::buildBundle(name, architecture.config()), architecture, error);
    EXPECT_NE(bundle, nullptr) << error;
    return bundle;
  }

  schema::Architecture architecture;
};

TEST_F(BundleKernelTest, SteeringMatchesLibTorch) {
  std::unique_ptr<Bundle> bundle = load("steer.mlir");
  ASSERT_TRUE(bundle);
  const BundleTrace &trace = bundle->traces().at(0);
  const BundleSite *site = trace.findSite(architecture.findSite("model.layers.0.output"));
  ASSERT_NE(site, nullptr);
  const int64_t hidden = architecture.config().hidden;

  // The default param, as the runtime binds it for a request that does not set `vec`.
  ASSERT_NE(trace.params[0].defaultValue, nullptr);
  torch::Tensor defaultVec =
      torch::from_blob(const_cast<void *>(trace.params[0].defaultValue), {hidden}, torch::kFloat32);
  torch::Tensor vecA = torch::randn({hidden});
  torch::Tensor vecB = torch::randn({2, hidden}).select(0, 1); // at an offset in its storage
  torch::Tensor wide = torch::randn({hidden * 2});
  torch::Tensor vecC = wide.slice(0, 0, hidden * 2, 2); // stride 2
  torch::Tensor wrong = torch::randn({64});
  nnsc_tensor params[5] = {abiTensor(vecA), abiTensor(vecB), abiTensor(vecC), abiTensor(defaultVec),
                           abiTensor(wrong)};

  for (bool padded : {false, true}) {
    SCOPED_TRACE(padded ? "padded rows" : "contiguous rows");
    const int64_t totalRows = 23;
    // A padded batch: the site tensor is a column slice of a wider buffer.
    torch::Tensor storage = torch::randn({totalRows, hidden + (padded ? 16 : 0)});
    torch::Tensor value = storage.slice(1, 0, hidden);
    torch::Tensor expected = value.clone();
    std::vector<nnsc_group> groups = {
        group(0, 7, 0, 1, &params[0]),                                 // a prefill chunk
        group(7, 1, 3, 2, &params[1]),                                 // decode steps
        group(8, 1, 9, 3, &params[2]),  group(9, 6, 0, 4, &params[3]), // default param
        group(15, 3, 0, 5, &params[4]),  // wrong param size: reported, rows untouched
        group(20, 3, 1, 6, &params[0])}; // rows 18..19 belong to no group
    for (const nnsc_group &g : groups)
      if (g.params != &params[4])
        expected.slice(0, g.row, g.row + g.rows) +=
            torch::from_blob(g.params->data, {hidden}, {g.params->strides[0]}, torch::kFloat32);

    Calls calls;
    nnsc_runtime rt = runtimeFor(calls);
    nnsc_tensor site_value = abiTensor(value);
    ASSERT_EQ(site->kernel(&site_value, groups.data(), groups.size(), &rt), 0);
    EXPECT_TRUE(torch::equal(value, expected));
    ASSERT_EQ(calls.errors.size(), 1u);
    EXPECT_EQ(calls.errors[5], "steer: param 'vec' does not match the hidden size");
    EXPECT_TRUE(calls.saves.empty());
  }
}

TEST_F(BundleKernelTest, LastTokenCaptureMatchesLibTorch) {
  std::unique_ptr<Bundle> bundle = load("capture.mlir");
  ASSERT_TRUE(bundle);
  const BundleTrace *trace = bundle->findTrace("lens");
  ASSERT_NE(trace, nullptr);
  const BundleSite *site = trace->findSite(architecture.findSite("model.layers.3.output"));
  ASSERT_NE(site, nullptr);
  const int64_t hidden = architecture.config().hidden;

  const int64_t totalRows = 19;
  torch::Tensor storage = torch::randn({totalRows, hidden + 8});
  torch::Tensor value = storage.slice(1, 4, 4 + hidden);
  torch::Tensor before = value.clone();
  std::vector<nnsc_group> groups = {group(0, 9, 0, 1, nullptr), group(9, 1, 4, 2, nullptr),
                                    group(10, 0, 2, 3, nullptr), // no rows: nothing to save
                                    group(10, 5, 0, 4, nullptr), group(15, 4, 1, 5, nullptr)};
  Calls calls;
  nnsc_runtime rt = runtimeFor(calls);
  nnsc_tensor site_value = abiTensor(value);
  ASSERT_EQ(site->kernel(&site_value, groups.data(), groups.size(), &rt), 0);

  EXPECT_TRUE(torch::equal(value, before)) << "a read-only site was written";
  EXPECT_TRUE(calls.errors.empty());
  ASSERT_EQ(calls.saves.size(), 4u);
  for (const nnsc_group &g : groups) {
    intptr_t request = reinterpret_cast<intptr_t>(g.request);
    if (g.rows == 0) {
      EXPECT_EQ(calls.saves.count(request), 0u);
      continue;
    }
    ASSERT_EQ(calls.saves.count(request), 1u) << "request " << request;
    EXPECT_EQ(calls.saves[request].first, g.step);
    EXPECT_TRUE(torch::equal(calls.saves[request].second, value[g.row + g.rows - 1]))
        << "request " << request;
  }
}

} // namespace
