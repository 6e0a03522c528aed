//===- StandaloneMain.cpp - run a fuzz target over files, without libFuzzer ===//
//
// The main build (gcc, no sanitizers) links every fuzz target with this driver instead of
// libFuzzer, as LLVM does for its fuzzers in builds without coverage instrumentation: it calls
// LLVMFuzzerTestOneInput once per file given, so the lit tests in test/Fuzz run each corpus
// (seeds and the regression inputs of every fixed crash) in the ordinary test suite, with no
// clang build. A crash, trap or abort fails the test; fuzzing itself is scripts/fuzz.
//
//===----------------------------------------------------------------------===//

#include <cstdint>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int main(int argc, char **argv) {
  std::string name = argv[0];
  name = name.substr(name.find_last_of('/') + 1);
  for (int i = 1; i < argc; ++i) {
    std::ifstream in(argv[i], std::ios::binary);
    if (!in) {
      std::fprintf(stderr, "%s: cannot read '%s'\n", name.c_str(), argv[i]);
      return 1;
    }
    std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    // A copy of exactly the input's size, so reads past its end are not hidden by slack.
    std::vector<uint8_t> input(bytes.begin(), bytes.end());
    LLVMFuzzerTestOneInput(input.data(), input.size());
  }
  std::printf("%s: %d inputs ran\n", name.c_str(), argc - 1);
  return 0;
}
