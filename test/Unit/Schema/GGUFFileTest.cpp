//===- GGUFFileTest.cpp - GGUF reader on well-formed and corrupt files -----===//

#include "nnsc/Support/GGUFFile.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

using namespace nnsc::gguf;

namespace {

/// Writes GGUF v3 bytes field by field, so tests can build valid files and corrupt them.
class Writer {
public:
  template <typename T> Writer &pod(T v) {
    const auto *p = reinterpret_cast<const uint8_t *>(&v);
    bytes.insert(bytes.end(), p, p + sizeof(T));
    return *this;
  }
  Writer &str(const std::string &s) {
    pod<uint64_t>(s.size());
    bytes.insert(bytes.end(), s.begin(), s.end());
    return *this;
  }
  void align(size_t to) {
    while (bytes.size() % to)
      bytes.push_back(0);
  }
  std::vector<uint8_t> bytes;
};

/// A file with two metadata entries and one 2x32 F32 tensor.
std::vector<uint8_t> validFile() {
  Writer w;
  w.pod<uint32_t>(0x46554747).pod<uint32_t>(3).pod<uint64_t>(1).pod<uint64_t>(3);
  w.str("general.architecture").pod<uint32_t>(8).str("llama");
  w.str("llama.block_count").pod<uint32_t>(4).pod<uint32_t>(2);
  w.str("tokenizer.ggml.tokens")
      .pod<uint32_t>(9)
      .pod<uint32_t>(8)
      .pod<uint64_t>(2)
      .str("a")
      .str("b");
  w.str("token_embd.weight").pod<uint32_t>(2).pod<uint64_t>(32).pod<uint64_t>(2);
  w.pod<uint32_t>(0).pod<uint64_t>(0);
  w.align(32);
  for (int i = 0; i < 64; ++i)
    w.pod<float>(float(i));
  return w.bytes;
}

std::string writeTemp(const std::vector<uint8_t> &bytes, const char *name) {
  std::string path = ::testing::TempDir() + name;
  std::ofstream(path, std::ios::binary)
      .write(reinterpret_cast<const char *>(bytes.data()), std::streamsize(bytes.size()));
  return path;
}

TEST(GGUFFile, ReadsMetadataAndTensors) {
  std::string error;
  auto file = GGUFFile::open(writeTemp(validFile(), "valid.gguf"), error);
  ASSERT_TRUE(file) << error;
  EXPECT_EQ(file->version(), 3u);
  EXPECT_EQ(file->getString("general.architecture"), "llama");
  EXPECT_EQ(file->getInt("llama.block_count"), 2);
  ASSERT_NE(file->getStringArray("tokenizer.ggml.tokens"), nullptr);
  EXPECT_EQ(file->getStringArray("tokenizer.ggml.tokens")->at(1), "b");
  const TensorInfo *t = file->findTensor("token_embd.weight");
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->dims, (std::vector<int64_t>{32, 2}));
  EXPECT_EQ(t->size, 64u * 4);
  float last;
  std::memcpy(&last, file->tensorData(*t) + 63 * 4, 4);
  EXPECT_EQ(last, 63.0f);
}

TEST(GGUFFile, EveryTruncationIsAnErrorNotACrash) {
  std::vector<uint8_t> bytes = validFile();
  for (size_t cut = 0; cut < bytes.size(); ++cut) {
    std::vector<uint8_t> prefix(bytes.begin(), bytes.begin() + long(cut));
    std::string error;
    auto file = GGUFFile::open(writeTemp(prefix, "truncated.gguf"), error);
    EXPECT_FALSE(file) << "a " << cut << "-byte prefix was accepted";
    EXPECT_FALSE(error.empty());
  }
}

TEST(GGUFFile, NamesWhatIsWrong) {
  std::string error;
  std::vector<uint8_t> bytes = validFile();
  bytes[0] = 'X';
  EXPECT_FALSE(GGUFFile::open(writeTemp(bytes, "magic.gguf"), error));
  EXPECT_NE(error.find("bad magic"), std::string::npos) << error;

  bytes = validFile();
  bytes[4] = 9;
  EXPECT_FALSE(GGUFFile::open(writeTemp(bytes, "version.gguf"), error));
  EXPECT_NE(error.find("unsupported GGUF version 9"), std::string::npos) << error;

  bytes = validFile();
  bytes.resize(bytes.size() - 4);
  EXPECT_FALSE(GGUFFile::open(writeTemp(bytes, "data.gguf"), error));
  EXPECT_NE(error.find("truncated: tensor 'token_embd.weight'"), std::string::npos) << error;

  EXPECT_FALSE(GGUFFile::open(::testing::TempDir() + "does-not-exist.gguf", error));
  EXPECT_NE(error.find("cannot open"), std::string::npos) << error;
}

TEST(GGUFFile, RandomByteFlipsNeverCrash) {
  std::vector<uint8_t> original = validFile();
  uint32_t state = 12345;
  for (int trial = 0; trial < 2000; ++trial) {
    std::vector<uint8_t> bytes = original;
    for (int flips = 0; flips < 3; ++flips) {
      state = state * 1664525u + 1013904223u;
      size_t at = (state >> 8) % 200; // the header, metadata and directory
      bytes[at] ^= uint8_t(state >> 24) | 1;
    }
    std::string error;
    auto file = GGUFFile::open(writeTemp(bytes, "flipped.gguf"), error);
    if (!file)
      EXPECT_FALSE(error.empty());
  }
}

} // namespace

// A reader that copied a tensor releases its pages (MappedFile::release): they leave the
// resident set but read the same afterwards, partial pages at either end included.
TEST(GGUFFile, ReleasedTensorDataReadsTheSame) {
  Writer w;
  w.pod<uint32_t>(0x46554747).pod<uint32_t>(3).pod<uint64_t>(1).pod<uint64_t>(0);
  w.str("big.weight").pod<uint32_t>(2).pod<uint64_t>(3000).pod<uint64_t>(3);
  w.pod<uint32_t>(0).pod<uint64_t>(0);
  w.align(32);
  for (int i = 0; i < 9000; ++i)
    w.pod<float>(float(i));
  std::string error;
  auto file = GGUFFile::open(writeTemp(w.bytes, "big.gguf"), error);
  ASSERT_TRUE(file) << error;
  const TensorInfo *t = file->findTensor("big.weight");
  ASSERT_NE(t, nullptr);
  std::vector<float> before(9000), after(9000);
  std::memcpy(before.data(), file->tensorData(*t), t->size);
  file->releaseTensorData(*t);
  std::memcpy(after.data(), file->tensorData(*t), t->size);
  EXPECT_EQ(before, after);
  EXPECT_EQ(after[8999], 8999.0f);
}
