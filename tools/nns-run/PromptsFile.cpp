//===- PromptsFile.cpp - nns-run's --prompts files --------------*- C++ -*-===//

#include "PromptsFile.h"

#include <nlohmann/json.hpp>

namespace nnsrun {

namespace {

/// The lines of `text`, without their '\n'.
template <typename Fn> void forEachLine(std::string_view text, Fn &&fn) {
  size_t pos = 0;
  for (int lineNo = 1; pos < text.size(); ++lineNo) {
    size_t end = text.find('\n', pos);
    std::string_view line =
        text.substr(pos, end == std::string_view::npos ? std::string_view::npos : end - pos);
    pos = end == std::string_view::npos ? text.size() : end + 1;
    if (!fn(line, lineNo))
      return;
  }
}

bool isBlank(std::string_view line) {
  return line.find_first_not_of(" \t\r") == std::string_view::npos;
}

/// `v` as an int32_t in [min, INT32_MAX], or nullopt for anything else (not an integer, out
/// of range; a JSON number above INT64_MAX is unsigned and must not be read as int64_t).
std::optional<int32_t> int32In(const nlohmann::json &v, int32_t min) {
  if (v.is_number_unsigned()) {
    uint64_t u = v.get<uint64_t>();
    if (u > uint64_t(INT32_MAX) || int64_t(u) < min)
      return std::nullopt;
    return int32_t(u);
  }
  if (!v.is_number_integer())
    return std::nullopt;
  int64_t i = v.get<int64_t>();
  if (i < min || i > INT32_MAX)
    return std::nullopt;
  return int32_t(i);
}

} // namespace

bool parsePromptLine(std::string_view line, std::optional<Prompt> &prompt, std::string &error) {
  prompt.reset();
  if (isBlank(line))
    return true;
  auto j = nlohmann::json::parse(line, nullptr, false);
  if (j.is_discarded() || !j.is_object()) {
    error = "not a JSON object";
    return false;
  }
  Prompt p;
  if (j.contains("prompt") && j["prompt"].is_string()) {
    p.text = j["prompt"].get<std::string>();
  } else if (j.contains("ids") && j["ids"].is_array()) {
    for (const auto &id : j["ids"]) {
      std::optional<int32_t> value = int32In(id, 0);
      if (!value) {
        error = "'ids' must hold token ids (integers from 0 to 2147483647)";
        return false;
      }
      p.ids.push_back(*value);
    }
    if (p.ids.empty()) {
      error = "'ids' is empty";
      return false;
    }
  } else {
    error = "needs a string 'prompt' or an array 'ids'";
    return false;
  }
  if (j.contains("max_tokens")) {
    std::optional<int32_t> value = int32In(j["max_tokens"], 0);
    if (!value) {
      error = "'max_tokens' must be an integer from 0 (the prompt pass alone) to 2147483647";
      return false;
    }
    p.maxTokens = *value;
  }
  if (j.contains("bundle")) {
    if (!j["bundle"].is_boolean()) {
      error = "'bundle' must be true or false";
      return false;
    }
    p.bundled = j["bundle"].get<bool>();
  }
  prompt = std::move(p);
  return true;
}

bool parsePromptsText(std::string_view text, const std::string &name, std::vector<Prompt> &prompts,
                      std::string &error) {
  bool ok = true;
  forEachLine(text, [&](std::string_view line, int lineNo) {
    std::optional<Prompt> prompt;
    std::string lineError;
    if (!parsePromptLine(line, prompt, lineError)) {
      error = name + ":" + std::to_string(lineNo) + ": " + lineError;
      // The usual mistake: plain prompts in a file that is read as JSONL.
      if (lineNo == 1 && lineError == "not a JSON object")
        error += " (a file of one plain-text prompt per line must be named *.txt)";
      return ok = false;
    }
    if (prompt)
      prompts.push_back(std::move(*prompt));
    return true;
  });
  return ok;
}

bool isPlainPromptsFile(std::string_view name) {
  return name.size() >= 4 && name.substr(name.size() - 4) == ".txt";
}

void parsePlainPrompts(std::string_view text, std::vector<Prompt> &prompts) {
  forEachLine(text, [&](std::string_view line, int) {
    if (!line.empty() && line.back() == '\r')
      line.remove_suffix(1);
    if (!isBlank(line))
      prompts.push_back({std::string(line), {}});
    return true;
  });
}

} // namespace nnsrun
