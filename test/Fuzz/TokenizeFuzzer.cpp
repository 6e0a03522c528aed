//===- TokenizeFuzzer.cpp - fuzz encode/decode of the model's tokenizer ---===//
//
// The bundled model's tokenizer (SmolLM2, byte-level BPE, from its GGUF) on arbitrary bytes:
//  - valid UTF-8 text round-trips, decode(encode(text)) == text, when the vocabulary has a
//    token for each of its bytes (SmolLM2's has none for most C0 controls: "a\x04b" encodes to
//    "a", "b" in transformers as here, so such text loses them);
//  - the streaming decoder's pieces, concatenated, equal decode() of the same ids;
//  - arbitrary ids (out of range, negative, special) decode without failing.
// A broken property aborts, so libFuzzer reports the input.
//
//===----------------------------------------------------------------------===//

#include "nnsc/Runtime/Tokenizer/ByteLevel.h"
#include "nnsc/Runtime/Tokenizer/StreamingDecoder.h"
#include "nnsc/Runtime/Tokenizer/Tokenizer.h"
#include "nnsc/Support/GGUFFile.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace {

const nnsc::tokenizer::Tokenizer &modelTokenizer() {
  static std::unique_ptr<nnsc::tokenizer::Tokenizer> tokenizer = [] {
    const char *path = std::getenv("NNSC_FUZZ_MODEL");
    std::string error;
    auto file = nnsc::gguf::GGUFFile::open(path ? path : NNSC_FUZZ_MODEL, error);
    std::unique_ptr<nnsc::tokenizer::Tokenizer> t;
    if (file)
      t = nnsc::tokenizer::Tokenizer::fromGGUF(*file, error);
    if (!t) {
      std::fprintf(stderr, "fuzz-tokenize: cannot load the model's tokenizer: %s\n", error.c_str());
      std::abort();
    }
    return t;
  }();
  return *tokenizer;
}

/// True when every byte of `text` has its own token in the vocabulary.
bool bytesRepresentable(const nnsc::tokenizer::Tokenizer &tokenizer, std::string_view text) {
  static const std::vector<bool> representable = [&] {
    std::vector<bool> table(256);
    for (int b = 0; b < 256; ++b)
      table[b] = tokenizer.tokenToId(nnsc::tokenizer::byteLevelEncode(std::string(1, char(b))))
                     .has_value();
    return table;
  }();
  for (unsigned char c : text)
    if (!representable[c])
      return false;
  return true;
}

/// True for well-formed UTF-8 (no overlongs, surrogates or code points past U+10FFFF).
bool isValidUtf8(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    unsigned char c = s[i];
    size_t n;
    uint32_t cp;
    if (c < 0x80) {
      ++i;
      continue;
    } else if ((c & 0xE0) == 0xC0) {
      n = 1, cp = c & 0x1F;
    } else if ((c & 0xF0) == 0xE0) {
      n = 2, cp = c & 0x0F;
    } else if ((c & 0xF8) == 0xF0) {
      n = 3, cp = c & 0x07;
    } else {
      return false;
    }
    if (n >= s.size() - i)
      return false;
    for (size_t k = 1; k <= n; ++k) {
      unsigned char d = s[i + k];
      if ((d & 0xC0) != 0x80)
        return false;
      cp = (cp << 6) | (d & 0x3F);
    }
    if ((n == 1 && cp < 0x80) || (n == 2 && cp < 0x800) || (n == 3 && cp < 0x10000) ||
        cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
      return false;
    i += n + 1;
  }
  return true;
}

std::string streamed(const nnsc::tokenizer::Tokenizer &tokenizer, const std::vector<int32_t> &ids,
                     bool skipSpecial) {
  nnsc::tokenizer::StreamingDecoder decoder(tokenizer, skipSpecial);
  std::string out;
  for (int32_t id : ids)
    out += decoder.step(id);
  return out + decoder.flush();
}

std::string escaped(std::string_view s) {
  std::string out;
  for (unsigned char c : s) {
    char buf[8];
    if (c >= 0x20 && c < 0x7f && c != '\\')
      out.push_back(char(c));
    else
      std::snprintf(buf, sizeof(buf), "\\x%02x", c), out += buf;
  }
  return out;
}

[[noreturn]] void broken(const char *what, std::string_view text, std::string_view got,
                         const std::vector<int32_t> &ids) {
  std::string list;
  for (int32_t id : ids)
    list += (list.empty() ? "" : ",") + std::to_string(id);
  std::fprintf(stderr, "fuzz-tokenize: %s\n  input: \"%s\"\n  got:   \"%s\"\n  ids:   %s\n", what,
               escaped(text).c_str(), escaped(got).c_str(), list.c_str());
  std::abort();
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const nnsc::tokenizer::Tokenizer &tokenizer = modelTokenizer();
  std::string_view text(reinterpret_cast<const char *>(data), size);

  std::vector<int32_t> ids = tokenizer.encode(text, false);
  std::string decoded = tokenizer.decode(ids, false);
  if (isValidUtf8(text) && bytesRepresentable(tokenizer, text) && decoded != text)
    broken("decode(encode(text)) != text", text, decoded, ids);
  if (std::string s = streamed(tokenizer, ids, false); s != decoded)
    broken("streamed decode != decode of the encoded ids", decoded, s, ids);

  // The same bytes read as ids (any int32, also negative and past the vocabulary).
  std::vector<int32_t> raw(size / 4);
  if (!raw.empty())
    std::memcpy(raw.data(), data, raw.size() * 4);
  for (bool skipSpecial : {false, true})
    if (std::string s = streamed(tokenizer, raw, skipSpecial);
        s != tokenizer.decode(raw, skipSpecial))
      broken("streamed decode != decode of arbitrary ids", tokenizer.decode(raw, skipSpecial), s,
             raw);
  return 0;
}
