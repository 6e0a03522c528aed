//===- PromptsFile.h - nns-run's --prompts files ----------------*- C++ -*-===//
//
// One request per line, in one of two formats chosen by the file's extension: FILE.txt holds
// one text prompt per line, taken as it is (a trailing '\r' dropped); any other file is JSONL,
// {"prompt": TEXT} or {"ids": [ID, ...]}, optionally with "max_tokens" (>= 0; 0 runs the prompt
// pass alone: its sites fire, nothing is generated) and "bundle" (false: run without the
// program). Blank lines are skipped in both.
// Parsing never exits: the caller reports the error (nns-run) or discards it (the fuzz target,
// test/Fuzz/PromptsFuzzer.cpp).
//
//===----------------------------------------------------------------------===//

#ifndef NNSC_TOOLS_NNSRUN_PROMPTSFILE_H
#define NNSC_TOOLS_NNSRUN_PROMPTSFILE_H

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace nnsrun {

struct Prompt {
  std::optional<std::string> text;
  std::vector<int32_t> ids;
  /// A per-request --max-tokens from the prompts file.
  std::optional<int64_t> maxTokens;
  /// False for a request that runs without the bundle ("bundle": false in the prompts file).
  bool bundled = true;
};

/// Parses one line. Returns false and sets `error` (what is wrong, without the location)
/// for a line that is not a valid request; a blank line gives true and no prompt.
bool parsePromptLine(std::string_view line, std::optional<Prompt> &prompt, std::string &error);

/// Parses the whole text of a prompts file named `name`, appending to `prompts`. Returns false
/// and sets `error` to "NAME:LINE: what is wrong" at the first bad line.
bool parsePromptsText(std::string_view text, const std::string &name, std::vector<Prompt> &prompts,
                      std::string &error);

/// True for a prompts file of plain text lines (FILE.txt), false for JSONL.
bool isPlainPromptsFile(std::string_view name);

/// Appends every non-blank line of the plain-text prompts `text` as a text prompt.
void parsePlainPrompts(std::string_view text, std::vector<Prompt> &prompts);

} // namespace nnsrun

#endif // NNSC_TOOLS_NNSRUN_PROMPTSFILE_H
