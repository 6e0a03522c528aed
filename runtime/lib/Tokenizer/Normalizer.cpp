//===- Normalizer.cpp - Text rewriting before pre-tokenization ------------===//

#include "nnsc/Runtime/Tokenizer/Normalizer.h"

namespace nnsc::tokenizer {

void Normalizer::addPrepend(std::string prefix) {
  steps.push_back({/*prepend=*/true, {}, std::move(prefix)});
}

void Normalizer::addReplace(std::string pattern, std::string content) {
  steps.push_back({/*prepend=*/false, std::move(pattern), std::move(content)});
}

std::string Normalizer::normalize(std::string text) const {
  for (const Step &step : steps) {
    if (step.prepend) {
      if (!text.empty())
        text = step.content + text;
    } else {
      text = replaceAll(text, step.pattern, step.content);
    }
  }
  return text;
}

std::string replaceAll(const std::string &text, const std::string &pattern,
                       const std::string &content) {
  std::string out;
  out.reserve(text.size());
  size_t pos = 0;
  while (true) {
    size_t hit = text.find(pattern, pos);
    if (hit == std::string::npos)
      break;
    out.append(text, pos, hit - pos);
    out += content;
    pos = hit + pattern.size();
  }
  out.append(text, pos, std::string::npos);
  return out;
}

} // namespace nnsc::tokenizer
