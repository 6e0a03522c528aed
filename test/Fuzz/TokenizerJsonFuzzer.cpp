//===- TokenizerJsonFuzzer.cpp - fuzz the tokenizer.json loader -----------===//
//
// A tokenizer.json from anywhere (a Hugging Face model directory): the model, added tokens,
// normalizer, pre-tokenizer, decoder and post-processor sections. A tokenizer it accepts must
// encode and decode a fixed text and every id of its vocabulary without failing.
//
//===----------------------------------------------------------------------===//

#include "nnsc/Runtime/Tokenizer/Tokenizer.h"

#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string_view json(reinterpret_cast<const char *>(data), size);
  std::string error;
  std::unique_ptr<nnsc::tokenizer::Tokenizer> tokenizer =
      nnsc::tokenizer::Tokenizer::fromJsonText(json, "{}", error);
  if (!tokenizer)
    return 0;
  std::vector<int32_t> ids =
      tokenizer->encode(" Hello, world!\n\t<|im_start|> 12345 \xC3\xA9", true);
  (void)tokenizer->decode(ids, false);
  std::vector<int32_t> all;
  for (size_t id = 0; id < tokenizer->vocabSize() && id < 4096; ++id)
    all.push_back(int32_t(id));
  (void)tokenizer->decode(all, false);
  (void)tokenizer->decode(all, true);
  return 0;
}
