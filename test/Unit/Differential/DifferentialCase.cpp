//===- DifferentialCase.cpp - reading differential test cases -------------===//

#include "DifferentialCase.h"

#include "nnsc/Runtime/Models/SafetensorsFile.h"

#include <nlohmann/json.hpp>

#include <fstream>
#include <stdexcept>

namespace nnsc::difftest {

namespace {

using json = nlohmann::json;

/// Tensors of the case's safetensors file, copied out of the mapping.
class TensorTable {
public:
  explicit TensorTable(const std::string &path) {
    std::string error;
    file = SafetensorsFile::open(path, error);
    if (!file)
      throw std::runtime_error(error);
  }

  torch::Tensor get(const json &key) const {
    std::string name = key.get<std::string>();
    const SafetensorInfo *info = file->find(name);
    if (!info)
      throw std::runtime_error(file->path() + ": no tensor '" + name + "'");
    static const std::map<std::string, torch::ScalarType> dtypes = {
        {"F32", torch::kFloat32}, {"I64", torch::kInt64}, {"BOOL", torch::kBool}};
    auto it = dtypes.find(info->dtype);
    if (it == dtypes.end())
      throw std::runtime_error(file->path() + ": tensor '" + name + "' has dtype " + info->dtype +
                               " (expected F32, I64 or BOOL)");
    return torch::from_blob(const_cast<uint8_t *>(info->data), info->shape,
                            torch::TensorOptions().dtype(it->second))
        .clone();
  }

private:
  std::unique_ptr<SafetensorsFile> file;
};

CaseGroup readGroup(const json &j) {
  CaseGroup g;
  g.request = j.at("request");
  g.row = j.at("row");
  g.rows = j.at("rows");
  g.position = j.value("position", int64_t(0));
  g.step = j.at("step");
  g.invoke = j.value("invoke", 0);
  return g;
}

std::set<std::pair<int64_t, int64_t>> readPairs(const json &j, const char *key) {
  std::set<std::pair<int64_t, int64_t>> out;
  for (const json &p : j.value(key, json::array()))
    out.insert({p.at(0).get<int64_t>(), p.at(1).get<int64_t>()});
  return out;
}

ProgramCase readProgram(const json &j, const TensorTable &tensors) {
  ProgramCase p;
  p.name = j.at("name");
  p.bundle = j.at("bundle");
  p.trace = j.value("trace", "");
  for (const json &r : j.at("requests")) {
    CaseRequest request;
    request.id = r.at("id");
    const json params = r.value("params", json::object());
    for (const auto &[name, key] : params.items())
      request.params[name] = tensors.get(key);
    p.requests.push_back(std::move(request));
  }
  for (const json &tick : j.at("ticks")) {
    std::vector<CaseCall> calls;
    for (const json &c : tick) {
      CaseCall call;
      call.site = c.at("site");
      call.value = tensors.get(c.at("value"));
      call.want = tensors.get(c.at("want"));
      for (const json &g : c.at("groups"))
        call.groups.push_back(readGroup(g));
      calls.push_back(std::move(call));
    }
    p.ticks.push_back(std::move(calls));
  }
  for (const json &s : j.value("saves", json::array()))
    p.saves[{s.at("request").get<int64_t>(), s.at("name").get<std::string>()}] =
        tensors.get(s.at("want"));
  for (const json &e : j.value("errors", json::array()))
    p.errors[e.at("request").get<int64_t>()] = e.at("contains").get<std::string>();
  p.stops = readPairs(j, "stops");
  p.finishes = readPairs(j, "finishes");
  return p;
}

} // namespace

CaseFile readCaseFile(const std::string &path) {
  std::ifstream in(path);
  if (!in)
    throw std::runtime_error("cannot open case file '" + path + "'");
  json j;
  try {
    j = json::parse(in);
    std::string stem = path.substr(0, path.rfind('.'));
    TensorTable tensors(stem + ".safetensors");
    CaseFile file;
    file.path = path;
    file.model = j.at("model");
    for (const json &p : j.at("programs"))
      file.programs.push_back(readProgram(p, tensors));
    return file;
  } catch (const json::exception &e) {
    throw std::runtime_error(path + ": " + e.what());
  }
}

} // namespace nnsc::difftest
