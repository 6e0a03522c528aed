//===- PyModel.cpp - a loaded model for Python ------------------*- C++ -*-===//

#include "PyModel.h"

#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/string_view.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <stdexcept>

namespace nb = nanobind;

namespace nnsc::python {

PyModel::PyModel(const std::string &path, const std::string &dtype, const std::string &device,
                 const std::string &weights)
    : path(path) {
  nb::gil_scoped_release release;
  loaded = loadModel({path, dtype, device, nullptr, std::nullopt, weights});
}

const tokenizer::Tokenizer &PyModel::tokenizer() const {
  if (!loaded.tokenizer)
    throw std::runtime_error("the model '" + path +
                             "' has no tokenizer; give prompts as token ids");
  return *loaded.tokenizer;
}

namespace {

const char *phaseName(schema::Phase phase) {
  switch (phase) {
  case schema::Phase::Forward:
    return "forward";
  case schema::Phase::Logits:
    return "logits";
  case schema::Phase::Samples:
    return "samples";
  case schema::Phase::Result:
    return "result";
  }
  return "?";
}

} // namespace

void bindModel(nb::module_ &m) {
  nb::class_<PyModel>(m, "Model")
      .def(nb::init<const std::string &, const std::string &, const std::string &,
                    const std::string &>(),
           nb::arg("path"), nb::arg("dtype"), nb::arg("device"), nb::arg("weights") = "packed")
      .def_ro("path", &PyModel::path)
      .def_prop_ro("has_tokenizer", [](const PyModel &p) { return bool(p.loaded.tokenizer); })
      .def_prop_ro("eos_token_ids", [](const PyModel &p) { return p.loaded.eosTokenIds; })
      .def_prop_ro("max_positions",
                   [](const PyModel &p) { return p.loaded.backend->config().maxPositions; })
      .def_prop_ro("vocab", [](const PyModel &p) { return p.loaded.backend->config().vocab; })
      .def_prop_ro("hidden", [](const PyModel &p) { return p.loaded.backend->config().hidden; })
      .def_prop_ro("layers", [](const PyModel &p) { return p.loaded.backend->config().layers; })
      .def(
          "encode",
          [](const PyModel &p, std::string_view text, bool addSpecial) {
            return p.tokenizer().encode(text, addSpecial);
          },
          nb::arg("text"), nb::arg("add_special_tokens"))
      .def(
          "decode",
          [](const PyModel &p, const std::vector<int32_t> &ids, bool skipSpecial) {
            return p.tokenizer().decode(ids, skipSpecial);
          },
          nb::arg("ids"), nb::arg("skip_special_tokens"))
      .def("chat_template", [](const PyModel &p) { return p.tokenizer().chatTemplate(); })
      .def("sites", [](const PyModel &p) {
        // (path, phase, shape with -1 for the token dimension, dtype, layer, writable)
        std::vector<
            std::tuple<std::string, std::string, std::vector<int64_t>, std::string, int, bool>>
            sites;
        for (const schema::Site &s : p.loaded.backend->architecture().sites())
          sites.emplace_back(s.path, phaseName(s.phase), s.shape,
                             s.elementType == schema::ElementType::F32 ? "float32" : "int64",
                             s.layer, s.writable);
        return sites;
      });
}

} // namespace nnsc::python
