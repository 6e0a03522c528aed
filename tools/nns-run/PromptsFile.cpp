//===- PromptsFile.cpp - nns-run's --prompts JSONL --------------*- C++ -*-===//

#include "PromptsFile.h"

#include <nlohmann/json.hpp>

namespace nnsrun {

namespace {

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
  if (line.find_first_not_of(" \t\r") == std::string_view::npos)
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
  size_t pos = 0;
  for (int lineNo = 1; pos < text.size(); ++lineNo) {
    size_t end = text.find('\n', pos);
    std::string_view line =
        text.substr(pos, end == std::string_view::npos ? std::string_view::npos : end - pos);
    pos = end == std::string_view::npos ? text.size() : end + 1;
    std::optional<Prompt> prompt;
    std::string lineError;
    if (!parsePromptLine(line, prompt, lineError)) {
      error = name + ":" + std::to_string(lineNo) + ": " + lineError;
      return false;
    }
    if (prompt)
      prompts.push_back(std::move(*prompt));
  }
  return true;
}

} // namespace nnsrun
