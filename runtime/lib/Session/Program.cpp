//===- Program.cpp - a bundle loaded for a model, and a trace bound -------===//

#include "nnsc/Session/Program.h"

#include "nnsc/Runtime/Backend/ModelBackend.h"
#include "nnsc/Runtime/Bundle/BundleLoader.h"

#include <fstream>
#include <iterator>

namespace nnsc::session {

std::shared_ptr<const Program> Program::load(const std::string &path, const ModelBackend &backend,
                                             std::string &error) {
  const std::shared_ptr<const CausalLM> model = backend.causalLM();
  if (!model || !backend.capabilities().bundleKernels) {
    error = "'" + path + "': this model backend runs no programs; load the model on the CPU";
    return nullptr;
  }
  std::unique_ptr<Bundle> bundle = loadBundle(path, backend.architecture(), error);
  if (!bundle) {
    error = "'" + path + "': " + error;
    return nullptr;
  }
  std::shared_ptr<Program> program(new Program());
  program->loaded = std::move(bundle);
  std::ifstream in(path, std::ios::binary);
  program->bytes.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  program->model = model;
  std::shared_ptr<DeviceKernelLauncher> launcher;
  try {
    launcher = backend.bundleLauncher(program->loaded);
  } catch (const std::exception &e) {
    error = "'" + path + "': " + e.what();
    return nullptr;
  }
  for (const BundleTrace &trace : program->loaded->traces())
    program->hooks[&trace] = std::make_shared<BundleHook>(program->loaded, trace, model, launcher);
  return program;
}

const BundleTrace *Program::findTrace(const std::string &name, const std::string &chooseWith,
                                      std::string &error) const {
  if (const BundleTrace *trace = loaded->findTrace(name))
    return trace;
  if (name.empty() && loaded->traces().size() == 1)
    return &loaded->traces().front();
  std::vector<std::string> traceNames;
  for (const BundleTrace &t : loaded->traces())
    traceNames.push_back(t.name);
  const std::string names = quotedList(traceNames);
  error = name.empty() ? "the program has several traces (" + names + "); " + chooseWith
                       : "the program has no trace '" + name + "' (its traces: " + names + ")";
  return nullptr;
}

const std::shared_ptr<BundleHook> &Program::hook(const BundleTrace &trace) const {
  return hooks.at(&trace);
}

std::string quotedList(const std::vector<std::string> &names) {
  std::string list;
  for (const std::string &name : names)
    list += (list.empty() ? "'" : ", '") + name + "'";
  return list;
}

std::string checkInvokes(const BundleTrace &trace, size_t prompts) {
  const size_t invokes = size_t(std::max(trace.numInvokes, 1));
  if (prompts == invokes)
    return "";
  if (invokes == 1)
    return "trace '" + trace.name + "' takes one prompt per request; got " +
           std::to_string(prompts);
  return "trace '" + trace.name + "' has " + std::to_string(invokes) + " invokes (" +
         quotedList(trace.invokeNames) +
         ") and takes one prompt per invoke, in invoke order; got " + std::to_string(prompts);
}

std::string checkEdit(const BoundTrace &edit) {
  if (edit.invokes() == 1)
    return "";
  return "an edit applies to each request on its own; its trace '" + edit.trace->name +
         "' has invokes";
}

} // namespace nnsc::session
