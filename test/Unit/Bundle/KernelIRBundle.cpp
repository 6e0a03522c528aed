//===- KernelIRBundle.cpp - bundles from the lit tests' kernel IR ---------===//

#include "KernelIRBundle.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <regex>
#include <sstream>
#include <vector>

#include <unistd.h>

namespace nnsc::test {

const schema::ModelConfig &smolLM2Config() {
  static const schema::ModelConfig config = [] {
    std::string error;
    std::optional<schema::ModelConfig> loaded =
        schema::ModelConfig::fromPath(NNSC_DEFAULT_MODEL, error);
    if (!loaded) {
      ADD_FAILURE() << error;
      return schema::ModelConfig{};
    }
    return *loaded;
  }();
  return config;
}

namespace {
/// Bundles built by this process, removed when it exits (a loaded bundle stays mapped).
struct BuiltFiles {
  std::vector<std::string> paths;
  ~BuiltFiles() {
    for (const std::string &path : paths)
      std::remove(path.c_str());
  }
};
BuiltFiles builtFiles;
} // namespace

std::string buildBundle(const std::string &name, const schema::ModelConfig &config,
                        const std::map<std::string, std::string> &replace) {
  std::ifstream in(std::string(NNSC_SOURCE_DIR) + "/test/Target/Bundle/" + name);
  std::stringstream text;
  text << in.rdbuf();
  std::string source = std::regex_replace(text.str(), std::regex("schema_hash = [0-9]+"),
                                          "schema_hash = " + std::to_string(config.schemaHash()));
  for (const auto &[from, to] : replace) {
    size_t at = source.find(from);
    EXPECT_NE(at, std::string::npos) << "'" << from << "' not in " << name;
    if (at != std::string::npos)
      source.replace(at, from.size(), to);
  }

  static int counter = 0;
  std::string stem = ::testing::TempDir() + "bundle-test-" + std::to_string(getpid()) + "-" +
                     std::to_string(counter++);
  std::ofstream(stem + ".mlir") << source;
  std::string command =
      std::string(NNSC_BUNDLE_EMIT) + " " + stem + ".mlir -emit=bundle -o " + stem + ".nnsb";
  EXPECT_EQ(std::system(command.c_str()), 0) << command;
  std::remove((stem + ".mlir").c_str());
  builtFiles.paths.push_back(stem + ".nnsb");
  return stem + ".nnsb";
}

} // namespace nnsc::test
