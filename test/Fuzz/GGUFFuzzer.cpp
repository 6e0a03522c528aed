//===- GGUFFuzzer.cpp - fuzz the GGUF reader, model config and tokenizer --===//
//
// A GGUF model file from anywhere: the reader (header, metadata, tensor directory, data
// bounds), then what the runtime and compiler read from it: the model config (and the site
// schema built from an accepted one) and the tokenizer, which encodes and decodes a fixed text.
//
//===----------------------------------------------------------------------===//

#include "FuzzSupport.h"

#include "nnsc/Runtime/Tokenizer/Tokenizer.h"
#include "nnsc/Schema/Architecture.h"
#include "nnsc/Schema/ModelConfig.h"
#include "nnsc/Support/GGUFFile.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  nnsc::fuzz::MemoryFile file(data, size);
  std::string error;
  std::unique_ptr<nnsc::gguf::GGUFFile> gguf = nnsc::gguf::GGUFFile::open(file.path(), error);
  if (!gguf)
    return 0;
  for (const nnsc::gguf::TensorInfo &info : gguf->tensors())
    nnsc::fuzz::touch(gguf->tensorData(info), size_t(info.size));

  if (std::optional<nnsc::schema::ModelConfig> config =
          nnsc::schema::ModelConfig::fromGGUF(*gguf, error))
    if (config->validate(error))
      nnsc::schema::Architecture architecture(*config);

  if (std::unique_ptr<nnsc::tokenizer::Tokenizer> tokenizer =
          nnsc::tokenizer::Tokenizer::fromGGUF(*gguf, error)) {
    std::vector<int32_t> ids = tokenizer->encode("Hello, world! <|im_start|>user\n1 + 1 =", true);
    (void)tokenizer->decode(ids, false);
  }
  return 0;
}
