//===- DifferentialCase.h - a differential test case on disk ----*- C++ -*-===//
//
// What the differential harness replays: a JSON file naming a model and, per program, a
// bundle and trace, the requests with their params, and ticks of site kernel calls (the flat
// site tensor before the call, the reference's tensor after it, the groups of the call); then
// everything the reference expects the kernels to have reported: saves by name, errors,
// stop() and finish(). Tensors live in a safetensors file next to the JSON (same stem), keyed
// by the names the JSON uses. The reference that writes these files is a torch evaluation of
// the same program (test/Conversion/Inputs/diff_case.py); this file only reads them.
//
//===----------------------------------------------------------------------===//

#ifndef NNSC_TEST_DIFFERENTIAL_DIFFERENTIALCASE_H
#define NNSC_TEST_DIFFERENTIAL_DIFFERENTIALCASE_H

#include <torch/torch.h>

#include <map>
#include <set>
#include <string>
#include <vector>

namespace nnsc::difftest {

/// One sequence's rows in one kernel call (an nnsc_group without the runtime's pointers).
struct CaseGroup {
  int64_t request = 0;
  int64_t row = 0, rows = 0, position = 0, step = 0;
  int32_t invoke = 0;
};

/// One kernel call: the site's flat tensor before, and as the reference left it after.
struct CaseCall {
  std::string site;
  torch::Tensor value, want;
  std::vector<CaseGroup> groups;
};

struct CaseRequest {
  int64_t id = 0;
  /// By param name; params of the trace missing here take their default.
  std::map<std::string, torch::Tensor> params;
};

/// One program: its requests, the calls of each forward pass in order, what it must report.
struct ProgramCase {
  std::string name, bundle, trace;
  std::vector<CaseRequest> requests;
  /// One forward pass per entry; the harness orders a tick's calls by site firing order.
  std::vector<std::vector<CaseCall>> ticks;
  /// (request, save name with ".<step>" for per-step saves) -> value.
  std::map<std::pair<int64_t, std::string>, torch::Tensor> saves;
  /// Request -> a substring its error message must contain; no other request may fail.
  std::map<int64_t, std::string> errors;
  /// (request, step) pairs at which stop() / finish() must have been called.
  std::set<std::pair<int64_t, int64_t>> stops, finishes;
};

/// A case file: the model whose modules the kernels call, and its programs.
struct CaseFile {
  std::string path, model;
  std::vector<ProgramCase> programs;
};

/// Reads `path` (JSON) and its tensors; throws std::runtime_error naming the file and what is
/// wrong.
CaseFile readCaseFile(const std::string &path);

} // namespace nnsc::difftest

#endif // NNSC_TEST_DIFFERENTIAL_DIFFERENTIALCASE_H
