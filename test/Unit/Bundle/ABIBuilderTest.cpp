//===- ABIBuilderTest.cpp - kernels built with ABIBuilder, run for real ---===//
//
// Builds site kernels with ABIBuilder (steering through memref views of the rows and a param,
// last-token capture through describe + save, stop/finish/skip and call_module through the
// callbacks), compiles them with the CPU back end into a bundle, dlopens it and runs the
// kernels on plain arrays against straightforward loops.
//
//===----------------------------------------------------------------------===//

#include "nnsc/Target/Bundle/ABIBuilder.h"
#include "nnsc/Bundle/BundleABI.h"
#include "nnsc/Dialect/NNS/Passes.h"
#include "nnsc/Target/Bundle/BundleEmitter.h"
#include "nnsc/Target/Bundle/KernelIR.h"
#include "nnsc/Target/Bundle/Manifest.h"

#include "mlir/AsmParser/AsmParser.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "llvm/Support/FileSystem.h"

#include <gtest/gtest.h>

#include <dlfcn.h>

#include <map>
#include <random>
#include <string>
#include <vector>

namespace {

using namespace mlir;
using nnsc::bundle::ABIBuilder;
using nnsc::bundle::GroupField;
namespace layout = nnsc::abi;

constexpr int64_t kHidden = 40;

/// Records every callback the kernels make.
struct Recorder {
  std::map<intptr_t, std::vector<float>> saved; ///< request -> saved row
  std::map<intptr_t, int64_t> savedStep;
  std::map<intptr_t, std::string> errors;
  std::vector<intptr_t> stopped, finished, skipped;
  std::vector<std::pair<int32_t, int64_t>> moduleCalls; ///< (module, rows)
};

Recorder *recorderOf(void *ctx) { return static_cast<Recorder *>(ctx); }

nnsc_runtime makeRuntime(Recorder &recorder) {
  nnsc_runtime rt{};
  rt.ctx = &recorder;
  rt.report_error = [](void *ctx, void *request, const char *message, int64_t, int64_t) {
    recorderOf(ctx)->errors[reinterpret_cast<intptr_t>(request)] = message;
  };
  rt.save = [](void *ctx, void *request, int32_t saveIndex, int64_t step,
               const nnsc_tensor *value) {
    ASSERT_EQ(saveIndex, 0);
    ASSERT_EQ(value->dtype, NNSC_DTYPE_F32);
    ASSERT_EQ(value->rank, 2);
    ASSERT_EQ(value->shape[0], 1);
    std::vector<float> row(value->shape[1]);
    for (int64_t j = 0; j < value->shape[1]; ++j)
      row[j] = static_cast<const float *>(value->data)[j * value->strides[1]];
    recorderOf(ctx)->saved[reinterpret_cast<intptr_t>(request)] = row;
    recorderOf(ctx)->savedStep[reinterpret_cast<intptr_t>(request)] = step;
  };
  rt.stop = [](void *ctx, void *request) {
    recorderOf(ctx)->stopped.push_back(reinterpret_cast<intptr_t>(request));
  };
  rt.finish = [](void *ctx, void *request) {
    recorderOf(ctx)->finished.push_back(reinterpret_cast<intptr_t>(request));
  };
  rt.skip = [](void *ctx, void *request) {
    recorderOf(ctx)->skipped.push_back(reinterpret_cast<intptr_t>(request));
  };
  // The "module" doubles its input into its output.
  rt.call_module = [](void *ctx, int32_t module, const nnsc_tensor *input,
                      nnsc_tensor *output) -> int32_t {
    recorderOf(ctx)->moduleCalls.push_back({module, input->shape[0]});
    for (int64_t i = 0; i < input->shape[0]; ++i)
      for (int64_t j = 0; j < input->shape[1]; ++j)
        static_cast<float *>(output->data)[i * output->strides[0] + j * output->strides[1]] =
            2 *
            static_cast<const float *>(input->data)[i * input->strides[0] + j * input->strides[1]];
    return 0;
  };
  return rt;
}

/// value[rows] += vec, with rows out of the tensor's range reported for the request.
void buildSteer(OpBuilder &builder, ModuleOp module) {
  Location loc = module.getLoc();
  func::FuncOp kernel = ABIBuilder::createKernel(builder, module, loc, "steer");
  ABIBuilder abi(builder, kernel);
  Value value = abi.args().value;
  abi.forEachGroup([&](Value group) {
    Value row = abi.load(group, GroupField::Row);
    Value rows = abi.load(group, GroupField::Rows);
    auto inBounds = scf::IfOp::create(builder, loc, abi.rowsInBounds(value, row, rows),
                                      /*withElseRegion=*/true);
    {
      OpBuilder::InsertionGuard guard(builder);
      builder.setInsertionPointToStart(inBounds.thenBlock());
      Value view = abi.rowsView(value, row, rows, 2, builder.getF32Type());
      Value vec = abi.view(abi.param(group, 0), 1, builder.getF32Type());
      Value c0 = arith::ConstantIndexOp::create(builder, loc, 0);
      Value c1 = arith::ConstantIndexOp::create(builder, loc, 1);
      Value numRows = memref::DimOp::create(builder, loc, view, 0);
      Value numCols = memref::DimOp::create(builder, loc, view, 1);
      auto outer = scf::ForOp::create(builder, loc, c0, numRows, c1);
      builder.setInsertionPoint(outer.getBody()->getTerminator());
      auto inner = scf::ForOp::create(builder, loc, c0, numCols, c1);
      builder.setInsertionPoint(inner.getBody()->getTerminator());
      Value i = outer.getInductionVar(), j = inner.getInductionVar();
      Value x = memref::LoadOp::create(builder, loc, view, ValueRange{i, j});
      Value v = memref::LoadOp::create(builder, loc, vec, ValueRange{j});
      memref::StoreOp::create(builder, loc, arith::AddFOp::create(builder, loc, x, v), view,
                              ValueRange{i, j});
      builder.setInsertionPointToStart(inBounds.elseBlock());
      abi.reportError(abi.load(group, GroupField::Request), "steer: rows out of range");
    }
  });
  abi.returnSuccess();
}

/// Saves each group's last row; stops invoke 1, finishes groups at step >= 2 and reports a
/// skip for groups at step 0.
void buildCapture(OpBuilder &builder, ModuleOp module) {
  Location loc = module.getLoc();
  func::FuncOp kernel = ABIBuilder::createKernel(builder, module, loc, "capture");
  ABIBuilder abi(builder, kernel);
  abi.forEachGroup([&](Value group) {
    Value row = abi.load(group, GroupField::Row);
    Value rows = abi.load(group, GroupField::Rows);
    Value request = abi.load(group, GroupField::Request);
    Value step = abi.load(group, GroupField::Step);
    Value one = arith::ConstantIntOp::create(builder, loc, builder.getI64Type(), 1);
    Value last =
        arith::SubIOp::create(builder, loc, arith::AddIOp::create(builder, loc, row, rows), one);
    Value view = abi.rowsView(abi.args().value, last, one, 2, builder.getF32Type());
    abi.save(request, 0, step, abi.describe(view, layout::DType::F32));
    Value invoke = abi.load(group, GroupField::Invoke);
    Value isSecond =
        arith::CmpIOp::create(builder, loc, arith::CmpIPredicate::eq, invoke,
                              arith::ConstantIntOp::create(builder, loc, builder.getI32Type(), 1));
    auto stopIf = scf::IfOp::create(builder, loc, isSecond);
    {
      OpBuilder::InsertionGuard guard(builder);
      builder.setInsertionPointToStart(stopIf.thenBlock());
      abi.stop(request);
    }
    Value late =
        arith::CmpIOp::create(builder, loc, arith::CmpIPredicate::sge, step,
                              arith::ConstantIntOp::create(builder, loc, builder.getI64Type(), 2));
    auto finishIf = scf::IfOp::create(builder, loc, late);
    {
      OpBuilder::InsertionGuard guard(builder);
      builder.setInsertionPointToStart(finishIf.thenBlock());
      abi.finish(request);
    }
    Value first =
        arith::CmpIOp::create(builder, loc, arith::CmpIPredicate::eq, step,
                              arith::ConstantIntOp::create(builder, loc, builder.getI64Type(), 0));
    auto skipIf = scf::IfOp::create(builder, loc, first);
    {
      OpBuilder::InsertionGuard guard(builder);
      builder.setInsertionPointToStart(skipIf.thenBlock());
      abi.skip(request);
    }
  });
  abi.returnSuccess();
}

/// Applies module 7 to each group's rows in place through call_module.
void buildCallModule(OpBuilder &builder, ModuleOp module) {
  Location loc = module.getLoc();
  func::FuncOp kernel = ABIBuilder::createKernel(builder, module, loc, "apply");
  ABIBuilder abi(builder, kernel);
  abi.forEachGroup([&](Value group) {
    Value view = abi.rowsView(abi.args().value, abi.load(group, GroupField::Row),
                              abi.load(group, GroupField::Rows), 2, builder.getF32Type());
    Value tensor = abi.describe(view, layout::DType::F32);
    (void)abi.callModule(7, tensor, tensor);
  });
  abi.returnSuccess();
}

constexpr const char *kManifest = R"(#nns.manifest<
  source_hash = "ab", arch = "llama", schema_hash = 5,
  dims = #nns.model_dims<hidden = 40, intermediate = 80, layers = 2, heads = 4, kv_heads = 2,
                         head_dim = 10, vocab = 100>,
  traces = [#nns.trace_desc<name = "", invoke_names = ["a", "b"], flags = [], frame_bytes = 0,
    frame_heap_slots = [],
    params = [#nns.param_desc<name = "vec", type = tensor<40xf32>>],
    saves = [#nns.save_desc<name = "h", type = tensor<1x40xf32>, flags = [per_step]>],
    sites = [#nns.site_entry<site = 1, path = "p1", phase = forward, access = [read, write],
                             kernel = @steer>,
             #nns.site_entry<site = 2, path = "p2", phase = forward, access = [read],
                             kernel = @capture>,
             #nns.site_entry<site = 3, path = "p3", phase = forward, access = [write],
                             kernel = @apply>]>]>)";

class ABIBuilderTest : public ::testing::Test {
protected:
  void SetUp() override {
    DialectRegistry registry;
    nnsc::bundle::registerKernelIRDialects(registry);
    MLIRContext context(registry);
    context.loadAllAvailableDialects();
    OpBuilder builder(&context);
    OwningOpRef<ModuleOp> module = ModuleOp::create(UnknownLoc::get(&context));
    buildSteer(builder, *module);
    buildCapture(builder, *module);
    buildCallModule(builder, *module);
    (*module)->setAttr(nnsc::nns::kManifestAttr, parseAttribute(kManifest, &context));
    ASSERT_TRUE(succeeded(verify(*module)));

    llvm::SmallString<128> path;
    ASSERT_FALSE(llvm::sys::fs::createTemporaryFile("abi-builder", "nnsb", path));
    bundlePath = path.str().str();
    ASSERT_TRUE(succeeded(nnsc::bundle::writeBundle(*module, {}, bundlePath)));
    handle = dlopen(bundlePath.c_str(), RTLD_NOW | RTLD_LOCAL);
    ASSERT_NE(handle, nullptr) << dlerror();
    auto query = reinterpret_cast<nnsc_bundle_query_fn>(dlsym(handle, NNSC_BUNDLE_QUERY_SYMBOL));
    ASSERT_NE(query, nullptr);
    bundle = query();
    ASSERT_EQ(bundle->num_traces, 1);
    ASSERT_EQ(bundle->traces[0].num_sites, 3);
  }

  void TearDown() override {
    if (handle)
      dlclose(handle);
    llvm::sys::fs::remove(bundlePath);
  }

  nnsc_site_kernel kernel(int index) const { return bundle->traces[0].sites[index].kernel; }

  std::string bundlePath;
  void *handle = nullptr;
  const nnsc_bundle *bundle = nullptr;
};

/// A [rows, kHidden] f32 tensor over `data` with a row stride of `rowStride` elements.
nnsc_tensor tensorOf(std::vector<float> &data, int64_t rows, int64_t rowStride) {
  nnsc_tensor t{};
  t.data = data.data();
  t.dtype = NNSC_DTYPE_F32;
  t.rank = 2;
  t.shape[0] = rows;
  t.shape[1] = kHidden;
  t.strides[0] = rowStride;
  t.strides[1] = 1;
  return t;
}

nnsc_group groupOf(int64_t row, int64_t rows, int64_t step, int32_t invoke, intptr_t request,
                   const nnsc_tensor *params) {
  nnsc_group g{};
  g.row = row;
  g.rows = rows;
  g.step = step;
  g.invoke = invoke;
  g.params = params;
  g.request = reinterpret_cast<void *>(request);
  return g;
}

TEST_F(ABIBuilderTest, SteeringAddsEachGroupsParamToItsRowsOnly) {
  const int64_t totalRows = 9, rowStride = kHidden + 3; // padded rows: strides are honoured
  std::mt19937 rng(7);
  std::normal_distribution<float> dist;
  std::vector<float> data(totalRows * rowStride);
  for (float &x : data)
    x = dist(rng);
  std::vector<float> expected = data;
  std::vector<float> vecA(kHidden), vecB(2 * kHidden);
  for (float &x : vecA)
    x = dist(rng);
  for (float &x : vecB)
    x = dist(rng);
  // Param B is read with stride 2 (a non-contiguous view).
  nnsc_tensor paramA{vecA.data(), NNSC_DTYPE_F32, 1, {kHidden}, {1}};
  nnsc_tensor paramB{vecB.data(), NNSC_DTYPE_F32, 1, {kHidden}, {2}};
  std::vector<nnsc_group> groups = {groupOf(0, 3, 0, 0, 1, &paramA),
                                    groupOf(5, 4, 3, 1, 2, &paramB),
                                    groupOf(7, 5, 0, 0, 3, &paramA)}; // past the end
  for (int64_t i = 0; i < 3; ++i)
    for (int64_t j = 0; j < kHidden; ++j)
      expected[i * rowStride + j] += vecA[j];
  for (int64_t i = 5; i < 9; ++i)
    for (int64_t j = 0; j < kHidden; ++j)
      expected[i * rowStride + j] += vecB[2 * j];

  Recorder recorder;
  nnsc_runtime rt = makeRuntime(recorder);
  nnsc_tensor value = tensorOf(data, totalRows, rowStride);
  ASSERT_EQ(kernel(0)(&value, groups.data(), groups.size(), &rt), 0);
  EXPECT_EQ(data, expected);
  ASSERT_EQ(recorder.errors.size(), 1u);
  EXPECT_EQ(recorder.errors[3], "steer: rows out of range");
}

TEST_F(ABIBuilderTest, CaptureSavesLastRowAndCallsStopAndFinish) {
  const int64_t totalRows = 8;
  std::vector<float> data(totalRows * kHidden);
  for (size_t i = 0; i < data.size(); ++i)
    data[i] = static_cast<float>(i) * 0.25f;
  std::vector<nnsc_group> groups = {groupOf(0, 5, 0, 0, 10, nullptr),
                                    groupOf(5, 1, 2, 1, 11, nullptr),
                                    groupOf(6, 2, 1, 1, 12, nullptr)};
  Recorder recorder;
  nnsc_runtime rt = makeRuntime(recorder);
  nnsc_tensor value = tensorOf(data, totalRows, kHidden);
  ASSERT_EQ(kernel(1)(&value, groups.data(), groups.size(), &rt), 0);
  for (const nnsc_group &g : groups) {
    intptr_t request = reinterpret_cast<intptr_t>(g.request);
    int64_t last = g.row + g.rows - 1;
    std::vector<float> expected(data.begin() + last * kHidden, data.begin() + (last + 1) * kHidden);
    EXPECT_EQ(recorder.saved[request], expected) << "request " << request;
    EXPECT_EQ(recorder.savedStep[request], g.step);
  }
  EXPECT_EQ(recorder.stopped, (std::vector<intptr_t>{11, 12}));
  EXPECT_EQ(recorder.finished, (std::vector<intptr_t>{11}));
  EXPECT_EQ(recorder.skipped, (std::vector<intptr_t>{10}));
}

TEST_F(ABIBuilderTest, CallModuleSeesEachGroupsRows) {
  const int64_t totalRows = 6;
  std::vector<float> data(totalRows * kHidden, 1.5f);
  std::vector<nnsc_group> groups = {groupOf(1, 2, 0, 0, 1, nullptr),
                                    groupOf(4, 1, 0, 0, 2, nullptr)};
  Recorder recorder;
  nnsc_runtime rt = makeRuntime(recorder);
  nnsc_tensor value = tensorOf(data, totalRows, kHidden);
  ASSERT_EQ(kernel(2)(&value, groups.data(), groups.size(), &rt), 0);
  EXPECT_EQ(recorder.moduleCalls, (std::vector<std::pair<int32_t, int64_t>>{{7, 2}, {7, 1}}));
  for (int64_t i = 0; i < totalRows; ++i) {
    float want = (i == 1 || i == 2 || i == 4) ? 3.0f : 1.5f;
    for (int64_t j = 0; j < kHidden; ++j)
      ASSERT_EQ(data[i * kHidden + j], want) << "row " << i;
  }
}

} // namespace
