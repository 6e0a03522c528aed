//===- BundleLoaderTest.cpp - loading and refusing bundles ----------------===//
//
// Bundles compiled from the lit tests' kernel IR are loaded against the bundled SmolLM2's
// schema; every refusal names the field that differs.
//
//===----------------------------------------------------------------------===//

#include "KernelIRBundle.h"

#include "nnsc/Runtime/Bundle/BundleLoader.h"

#include <gtest/gtest.h>

#include <cstring>
#include <fstream>

namespace {

using namespace nnsc;

class BundleLoaderTest : public ::testing::Test {
protected:
  BundleLoaderTest() : architecture(test::smolLM2Config()) {}

  /// Loads `path`, expecting a refusal; returns the message.
  std::string refusal(const std::string &path) {
    std::string error;
    std::unique_ptr<Bundle> bundle = loadBundle(path, architecture, error);
    EXPECT_EQ(bundle, nullptr);
    return error;
  }

  schema::Architecture architecture;
};

TEST_F(BundleLoaderTest, AcceptsMatchingBundleAndExposesManifest) {
  std::string path = test::buildBundle("capture.mlir", architecture.config());
  std::string error;
  std::unique_ptr<Bundle> bundle = loadBundle(path, architecture, error);
  ASSERT_NE(bundle, nullptr) << error;
  EXPECT_EQ(bundle->sourceHash(), "9e3d");
  EXPECT_EQ(bundle->cuda(), nullptr);
  ASSERT_EQ(bundle->traces().size(), 2u);

  const BundleTrace *lens = bundle->findTrace("lens");
  ASSERT_NE(lens, nullptr);
  EXPECT_TRUE(lens->readsPrompt());
  EXPECT_FALSE(lens->writesPrompt());
  ASSERT_EQ(lens->saves.size(), 1u);
  EXPECT_EQ(lens->saves[0].name, "h");
  EXPECT_EQ(lens->saves[0].shape, (std::vector<int64_t>{576}));
  EXPECT_TRUE(lens->saves[0].perStep);
  const BundleSite *site = lens->findSite(109);
  ASSERT_NE(site, nullptr);
  EXPECT_EQ(site->path, "model.layers.3.output");
  EXPECT_EQ(site->access, static_cast<uint32_t>(NNSC_ACCESS_READ));
  EXPECT_NE(site->kernel, nullptr);
  EXPECT_EQ(lens->findSite(28), nullptr);

  const BundleTrace *patch = bundle->findTrace("patch");
  ASSERT_NE(patch, nullptr);
  EXPECT_EQ(patch->invokeNames, (std::vector<std::string>{"clean", "corrupt"}));
  EXPECT_TRUE(patch->mayStop());
  EXPECT_EQ(patch->frameBytes, 2304);
  ASSERT_EQ(patch->params.size(), 3u);
  int64_t k;
  std::memcpy(&k, patch->params[0].defaultValue, sizeof(k));
  EXPECT_EQ(k, 7);
  const auto *on = static_cast<const uint8_t *>(patch->params[1].defaultValue);
  EXPECT_EQ(std::vector<uint8_t>(on, on + 3), (std::vector<uint8_t>{1, 0, 1}));
  EXPECT_EQ(patch->params[2].defaultValue, nullptr);
  EXPECT_EQ(patch->saves[0].shape, (std::vector<int64_t>{NNSC_DIM_TOKENS, 576}));
  ASSERT_EQ(patch->sites.size(), 3u);
  EXPECT_EQ(patch->sites[2].phase, NNSC_PHASE_LOGITS);
  EXPECT_EQ(patch->sites[1].access, static_cast<uint32_t>(NNSC_ACCESS_WRITE | NNSC_ACCESS_SKIP));
}

TEST_F(BundleLoaderTest, RefusesOtherABIVersion) {
  EXPECT_EQ(refusal(NNSC_BAD_VERSION_BUNDLE),
            "bundle '" NNSC_BAD_VERSION_BUNDLE "': bundle ABI version " +
                std::to_string(NNSC_BUNDLE_ABI_VERSION + 1) + " but this runtime reads version " +
                std::to_string(NNSC_BUNDLE_ABI_VERSION) +
                ": rebuild the bundle from its source with this nnsc");
}

TEST_F(BundleLoaderTest, RefusesOtherArchitecture) {
  std::string path = test::buildBundle("steer.mlir", architecture.config(),
                                       {{"arch = \"llama\"", "arch = \"qwen2\""}});
  EXPECT_EQ(refusal(path),
            "bundle '" + path + "': bundle was built for arch=qwen2 but the model has arch=llama");
}

TEST_F(BundleLoaderTest, RefusesOtherDimensionsNamingTheField) {
  std::string path =
      test::buildBundle("steer.mlir", architecture.config(), {{"hidden = 576", "hidden = 64"}});
  EXPECT_EQ(refusal(path),
            "bundle '" + path + "': bundle was built for hidden=64 but the model has hidden=576");
  path =
      test::buildBundle("steer.mlir", architecture.config(), {{"vocab = 49152", "vocab = 32000"}});
  EXPECT_EQ(refusal(path), "bundle '" + path +
                               "': bundle was built for vocab=32000 but the model has vocab=49152");
}

TEST_F(BundleLoaderTest, RefusesOtherSchemaWithSameDimensions) {
  schema::ModelConfig other = architecture.config();
  other.qkNorm = true; // another site schema (Qwen3-style q/k norms), same dimensions
  ASSERT_NE(other.schemaHash(), architecture.config().schemaHash());
  std::string path = test::buildBundle("steer.mlir", other);
  EXPECT_EQ(refusal(path), "bundle '" + path + "': bundle was built for schema_hash=" +
                               std::to_string(other.schemaHash()) +
                               " but the model has schema_hash=" +
                               std::to_string(architecture.config().schemaHash()) +
                               " (same dimensions: the site schema of 'llama' changed)");
}

TEST_F(BundleLoaderTest, RefusesSitePathMismatch) {
  std::string path =
      test::buildBundle("steer.mlir", architecture.config(),
                        {{"path = \"model.layers.0.output\"", "path = \"model.layers.0.input\""}});
  EXPECT_EQ(refusal(path), "bundle '" + path +
                               "': trace '' site entry 0 is site 28 'model.layers.0.input' but "
                               "the model's site 28 is 'model.layers.0.output'");
  path = test::buildBundle("steer.mlir", architecture.config(), {{"site = 28", "site = 5000"}});
  EXPECT_EQ(refusal(path), "bundle '" + path +
                               "': trace '' site entry 0 is site 5000 'model.layers.0.output' "
                               "but the model has " +
                               std::to_string(architecture.sites().size()) + " sites");
}

TEST_F(BundleLoaderTest, RefusesFilesThatAreNotBundles) {
  std::string text = ::testing::TempDir() + "not-a-bundle.nnsb";
  std::ofstream(text) << "not an ELF file\n";
  std::string message = refusal(text);
  EXPECT_EQ(message.rfind("cannot load bundle '" + text + "': ", 0), 0u) << message;

  EXPECT_EQ(refusal(NNSC_NO_QUERY_LIBRARY),
            "'" NNSC_NO_QUERY_LIBRARY "' is not a bundle: it exports no 'nnsc_bundle_query'");

  message = refusal("/nonexistent/x.nnsb");
  EXPECT_EQ(message.rfind("cannot load bundle '/nonexistent/x.nnsb': ", 0), 0u) << message;
}

/// checkBundle on tables the compiler would never emit: the loader still does not trust them.
TEST_F(BundleLoaderTest, RefusesMalformedTables) {
  const schema::ModelConfig &config = architecture.config();
  auto kernel = [](nnsc_tensor *, const nnsc_group *, int32_t, const nnsc_runtime *) {
    return int32_t{0};
  };
  nnsc_site_entry sites[2] = {
      {109, "model.layers.3.output", NNSC_PHASE_FORWARD, NNSC_ACCESS_READ, kernel},
      {28, "model.layers.0.output", NNSC_PHASE_FORWARD, NNSC_ACCESS_READ, kernel}};
  nnsc_trace_desc trace{"t", 0, nullptr, 0, 0, 0, nullptr, 0, nullptr, 0, nullptr, 2, sites};
  nnsc_bundle table{NNSC_BUNDLE_ABI_VERSION,
                    "00",
                    "llama",
                    config.schemaHash(),
                    config.hidden,
                    config.intermediate,
                    config.layers,
                    config.heads,
                    config.kvHeads,
                    config.headDim,
                    config.vocab,
                    1,
                    &trace,
                    nullptr};
  std::string error;
  EXPECT_FALSE(checkBundle(table, architecture, error));
  EXPECT_EQ(error, "trace 't' site entry 1 ('model.layers.0.output') is out of firing order");

  sites[1] = {816, "logits", NNSC_PHASE_LOGITS, NNSC_ACCESS_READ, nullptr};
  EXPECT_FALSE(checkBundle(table, architecture, error));
  EXPECT_EQ(error, "trace 't' site entry 1 ('logits') has no kernel");

  trace.num_sites = 1;
  trace.num_params = 1;
  EXPECT_FALSE(checkBundle(table, architecture, error));
  EXPECT_EQ(error, "trace 0 has a malformed table");

  trace.num_params = 0;
  EXPECT_TRUE(checkBundle(table, architecture, error)) << error;

  // Heap slots: pointers inside the frame, 8-aligned, ascending; the runtime frees them.
  int64_t heapSlots[2] = {8, 16};
  trace.frame_bytes = 24;
  trace.num_frame_heap_slots = 2;
  EXPECT_FALSE(checkBundle(table, architecture, error));
  EXPECT_EQ(error, "trace 0 has a malformed table");
  trace.frame_heap_slots = heapSlots;
  EXPECT_TRUE(checkBundle(table, architecture, error)) << error;
  for (auto [first, second] : {std::pair{8, 20}, {16, 8}, {8, 24}}) {
    heapSlots[0] = first;
    heapSlots[1] = second;
    EXPECT_FALSE(checkBundle(table, architecture, error));
    EXPECT_EQ(error, "trace 't' has frame heap slot " + std::to_string(second) +
                         ", not an ascending, 8-aligned pointer inside its frame of 24 bytes");
  }
  trace.num_frame_heap_slots = 0;

  // A CUDA bundle must carry a device copy of every site kernel.
  nnsc_cuda_kernel device{kernel, "k", 0, 0};
  const char *message = "m";
  nnsc_cuda_code cuda{"// ptx", "sm_90", 1, &device, 1, &message};
  table.cuda = &cuda;
  sites[0] = {
      109, "model.layers.3.output", NNSC_PHASE_FORWARD, NNSC_ACCESS_READ,
      [](nnsc_tensor *, const nnsc_group *, int32_t, const nnsc_runtime *) { return int32_t{1}; }};
  EXPECT_FALSE(checkBundle(table, architecture, error));
  EXPECT_EQ(error, "trace 't' site 'model.layers.3.output' has no CUDA kernel in a bundle built "
                   "for CUDA");
  device.host = sites[0].kernel;
  EXPECT_TRUE(checkBundle(table, architecture, error)) << error;
  cuda.ptx = nullptr;
  EXPECT_FALSE(checkBundle(table, architecture, error));
  EXPECT_EQ(error, "bundle has a malformed CUDA table");
}

} // namespace
