//===- DifferentialTest.cpp - compiled bundles vs a torch reference -------===//
//
// `NNSCDifferentialTests CASE.json...`: one GoogleTest per program of each case file. The
// bundle is loaded through the runtime's BundleLoader, checked against the case's model
// (whose modules serve the kernels' module calls), and replayed by ProgramRunner against the
// reference recorded in the case. lit runs it over the canonical and random programs
// (test/Conversion/*-differential.test); docs/Testing.md explains the design.
//
//===----------------------------------------------------------------------===//

#include "DifferentialCase.h"
#include "ProgramRunner.h"

#include "nnsc/Runtime/Backend/CpuKernels.h"
#include "nnsc/Runtime/Bundle/BundleLoader.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <map>

using namespace nnsc;
using namespace nnsc::difftest;

namespace {

/// A case file with its model and the bundles its programs use, loaded once.
struct LoadedCase {
  CaseFile file;
  std::shared_ptr<CausalLM> model;
  std::map<std::string, std::shared_ptr<Bundle>> bundles;
  std::string loadError;

  /// The bundle at `name` (relative to the case file), loaded on first use.
  std::shared_ptr<Bundle> bundle(const std::string &name, std::string &error) {
    auto it = bundles.find(name);
    if (it != bundles.end())
      return it->second;
    std::string path = resolve(name);
    std::shared_ptr<Bundle> loaded = loadBundle(path, model->architecture(), error);
    if (loaded)
      bundles[name] = loaded;
    return loaded;
  }

  std::string resolve(const std::string &name) const {
    std::filesystem::path p(name);
    return p.is_absolute() ? name : (std::filesystem::path(file.path).parent_path() / p).string();
  }
};

class ProgramTest : public testing::Test {
public:
  ProgramTest(std::shared_ptr<LoadedCase> loaded, size_t index)
      : loaded(std::move(loaded)), index(index) {}

  void TestBody() override {
    const ProgramCase &program = loaded->file.programs[index];
    std::string error;
    std::shared_ptr<Bundle> bundle = loaded->bundle(program.bundle, error);
    ASSERT_TRUE(bundle) << program.bundle << ": " << error;
    std::vector<std::string> problems = ProgramRunner(*bundle, *loaded->model).run(program);
    for (size_t i = 0; i < problems.size() && i < 5; ++i)
      ADD_FAILURE() << program.name << ": " << problems[i];
    EXPECT_TRUE(problems.empty()) << program.name << ": " << problems.size()
                                  << " disagreements with the reference";
  }

private:
  std::shared_ptr<LoadedCase> loaded;
  size_t index;
};

/// Stands for a case file that could not be read, so the failure shows up as a test.
class BrokenCaseTest : public testing::Test {
public:
  explicit BrokenCaseTest(std::string message) : message(std::move(message)) {}
  void TestBody() override { FAIL() << message; }

private:
  std::string message;
};

std::string stem(const std::string &path) { return std::filesystem::path(path).stem().string(); }

void registerCase(const std::string &path) {
  auto loaded = std::make_shared<LoadedCase>();
  std::string error;
  try {
    loaded->file = readCaseFile(path);
    loaded->model = std::make_shared<CausalLM>(
        ModelWeights::load(loaded->resolve(loaded->file.model), torch::kFloat32),
        CpuKernels::get());
  } catch (const std::exception &e) {
    error = e.what();
  }
  if (!error.empty()) {
    testing::RegisterTest(stem(path).c_str(), "Load", nullptr, nullptr, __FILE__, __LINE__,
                          [error]() -> testing::Test * { return new BrokenCaseTest(error); });
    return;
  }
  for (size_t i = 0; i < loaded->file.programs.size(); ++i)
    testing::RegisterTest(stem(path).c_str(), loaded->file.programs[i].name.c_str(), nullptr,
                          nullptr, __FILE__, __LINE__,
                          [loaded, i]() -> testing::Test * { return new ProgramTest(loaded, i); });
}

} // namespace

int main(int argc, char **argv) {
  testing::InitGoogleTest(&argc, argv);
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s CASE.json...\n", argv[0]);
    return 2;
  }
  for (int i = 1; i < argc; ++i)
    registerCase(argv[i]);
  return RUN_ALL_TESTS();
}
